import {
  Injectable,
  ValidationPipe,
  type ArgumentMetadata,
  type ValidationError,
} from '@nestjs/common';
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

const PLAIN_CHECKED = Symbol('scribe:plain-checked');

/**
 * Marks an input class that Scribe's pipe leaves alone: its handler checks it in plain code,
 * in one pass. For inputs that carry free-form JSON, which class-transformer would walk in time
 * quadratic in its keys before any size check could run. A resolver takes such an input as
 * {@link Unpiped}, so that a host's global pipe leaves it alone too.
 */
export function PlainChecked(): ClassDecorator {
  return (target) => {
    Reflect.defineMetadata(PLAIN_CHECKED, true, target);
  };
}

/**
 * Scribe's pipe: Nest's ValidationPipe, but for the classes marked {@link PlainChecked}. It
 * transforms, and refuses unknown properties instead of dropping them. Nest builds it for each
 * Scribe resolver (ScribeResolver); a host's resolvers keep their own pipes.
 */
@Injectable()
export class ScribeValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: true,
      exceptionFactory: (errors) => {
        const failure = firstValidationFailure(errors) ?? { field: 'input', reason: 'is invalid' };
        return ScribeException.invalidInput(failure.field, failure.reason);
      },
    });
  }

  protected override toValidate(metadata: ArgumentMetadata): boolean {
    if (metadata.metatype && Reflect.getMetadata(PLAIN_CHECKED, metadata.metatype) === true) {
      return false;
    }
    return super.toValidate(metadata);
  }
}

/**
 * The type a resolver gives its parameter for a {@link PlainChecked} input, naming the GraphQL
 * type in `@Args({ type })`. TypeScript records a generic type as Object in the parameter's
 * metadata, and Nest's ValidationPipe leaves Object alone: so a host's global ValidationPipe,
 * which runs before Scribe's, never strips or refuses these inputs (their fields carry no
 * class-validator rule: `whitelist` would drop them all, `forbidUnknownValues` refuse them)
 * nor walks their free-form JSON, whatever its options.
 */
export type Unpiped<Input> = Readonly<Input>;

/** A pipe of Scribe's, for code that validates by hand (a resolver's own arguments). */
export function createValidationPipe(): ValidationPipe {
  return new ScribeValidationPipe();
}
