import { getMetadataStorage } from 'class-validator';
import { Environment } from './environment.js';

/**
 * The @Min and @Max of an integer variable of Environment, read from class-validator's own
 * metadata: the bounds an option's error states are the rules themselves, not a copy of them.
 */
export function integerBounds(variable: string): { min: number; max: number } | undefined {
  const rules = getMetadataStorage()
    .getTargetValidationMetadatas(Environment, '', true, false)
    .filter((rule) => rule.propertyName === variable);
  const bound = (name: string): unknown => rules.find((rule) => rule.name === name)?.constraints[0];
  const min = bound('min');
  const max = bound('max');
  return typeof min === 'number' && typeof max === 'number' ? { min, max } : undefined;
}
