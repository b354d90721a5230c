import { type ScribeConfig } from '../../config/scribe-config.js';

/** Where Scribe's HTTP steps apply, as Express mount paths (each matches its subtree). */
export interface ScribePaths {
  /** Scribe's own routes: GraphQL, /health and /metrics. */
  readonly scribe: string[];
  /**
   * Where the refusal gate stands: Scribe's routes, or every path (guardAllPaths). Every path
   * is '/' alone, not in a list: Express matches a listed '/' against '/' only.
   */
  readonly guarded: string | string[];
}

export function scribePaths(config: Pick<ScribeConfig, 'graphqlPath' | 'guardAllPaths'>) {
  const scribe = [config.graphqlPath, '/health', '/metrics'];
  return { scribe, guarded: config.guardAllPaths ? '/' : scribe } satisfies ScribePaths;
}
