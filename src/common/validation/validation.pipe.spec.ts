import { type ValidationError } from '@nestjs/common';
import { plainToInstance, Type } from 'class-transformer';
import {
  IsArray,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateNested,
  validateSync,
} from 'class-validator';
import { firstValidationFailure } from './validation.pipe.js';

class MessageDto {
  @IsString()
  @IsNotEmpty()
  content: string;

  @IsOptional()
  @IsString()
  @MaxLength(4)
  toolName?: string;
}

class AppendDto {
  @IsNotEmpty({ message: 'a session id is required' })
  sessionId: string;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => MessageDto)
  messages: MessageDto[];
}

class EnvelopeDto {
  @ValidateNested()
  @Type(() => AppendDto)
  input: AppendDto;

  @IsInt()
  @Min(1)
  @Max(1000)
  first: number;
}

/** class-validator's errors for `plain` read as `type`, as the global pipe sees them. */
function errorsOf<T extends object>(type: new () => T, plain: object): ValidationError[] {
  return validateSync(plainToInstance(type, plain));
}

const message = (content: unknown, toolName?: string): object => ({ content, toolName });

describe(firstValidationFailure.name, () => {
  it('returns undefined when nothing failed', () => {
    expect(firstValidationFailure([])).toBeUndefined();
    expect(
      firstValidationFailure(errorsOf(AppendDto, { sessionId: 's', messages: [message('hi')] })),
    ).toBeUndefined();
  });

  it('names a top-level field and strips its name from the reason', () => {
    const errors = errorsOf(EnvelopeDto, {
      input: { sessionId: 's', messages: [] },
      first: 5000,
    });

    expect(firstValidationFailure(errors)).toEqual({
      field: 'first',
      reason: 'must not be greater than 1000',
    });
  });

  it('gives the path of a field inside an array item, like messages.3.content', () => {
    const errors = errorsOf(AppendDto, {
      sessionId: 's',
      messages: [message('a'), message('b'), message('c'), message('')],
    });

    expect(firstValidationFailure(errors)).toEqual({
      field: 'messages.3.content',
      reason: 'should not be empty',
    });
  });

  it('follows nested objects, and prefixes the parent path it is given', () => {
    const errors = errorsOf(EnvelopeDto, {
      input: { sessionId: 's', messages: [message('a'), message('b', 'too long')] },
      first: 10,
    });

    expect(firstValidationFailure(errors)).toEqual({
      field: 'input.messages.1.toolName',
      reason: 'must be shorter than or equal to 4 characters',
    });
    expect(firstValidationFailure(errors, 'args')).toEqual({
      field: 'args.input.messages.1.toolName',
      reason: 'must be shorter than or equal to 4 characters',
    });
  });

  it('reports the first failing field when several fail', () => {
    const errors = errorsOf(AppendDto, {
      sessionId: 's',
      messages: [message('ok'), message(42), message('')],
    });

    expect(firstValidationFailure(errors)).toEqual({
      field: 'messages.1.content',
      reason: 'must be a string',
    });
  });

  it('keeps a reason that does not start with the property name', () => {
    const errors = errorsOf(AppendDto, { sessionId: '', messages: [] });

    expect(firstValidationFailure(errors)).toEqual({
      field: 'sessionId',
      reason: 'a session id is required',
    });
  });

  it('strips the property name only as a whole leading word', () => {
    const errors: ValidationError[] = [
      {
        property: 'content',
        constraints: { custom: 'contents of content must be text' },
        children: [],
      },
    ];

    expect(firstValidationFailure(errors)).toEqual({
      field: 'content',
      reason: 'contents of content must be text',
    });
  });

  it('takes the first constraint of a field that breaks several', () => {
    const errors: ValidationError[] = [
      {
        property: 'first',
        constraints: {
          isInt: 'first must be an integer number',
          min: 'first must not be less than 1',
        },
        children: [],
      },
    ];

    expect(firstValidationFailure(errors)).toEqual({
      field: 'first',
      reason: 'must be an integer number',
    });
  });
});
