import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { ScribeException } from '../errors/scribe.exception.js';

/** Flattens class-validator's tree into `path: reason` for the first failing field. */
export function firstValidationFailure(
  errors: ValidationError[],
  parentPath = '',
): { field: string; reason: string } | undefined {
  for (const error of errors) {
    const field = parentPath ? `${parentPath}.${error.property}` : error.property;
    const constraints = Object.values(error.constraints ?? {});
    if (constraints.length > 0) {
      // class-validator's messages start with the property name; the field path replaces it.
      const reason = constraints[0].replace(new RegExp(`^${error.property} `), '');
      return { field, reason };
    }
    const nested = firstValidationFailure(error.children ?? [], field);
    if (nested) return nested;
  }
  return undefined;
}

/** The global pipe: transforms, and refuses unknown properties instead of dropping them. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    transform: true,
    whitelist: true,
    forbidNonWhitelisted: true,
    exceptionFactory: (errors) => {
      const failure = firstValidationFailure(errors) ?? { field: 'input', reason: 'is invalid' };
      return ScribeException.invalidInput(failure.field, failure.reason);
    },
  });
}
