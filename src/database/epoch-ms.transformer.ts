import { type ValueTransformer } from 'typeorm';

/** Epoch milliseconds are stored as BIGINT; PostgreSQL hands BIGINT back as a string. */
export const epochMsTransformer: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null ? null : Number(value)),
};
