import { randomBytes } from 'node:crypto';

/**
 * This process among the instances that share a database or a spool directory: its id names
 * its order keys, its journal segments and its heartbeat row. A new one for every start.
 */
export class ScribeInstance {
  readonly id: string;

  constructor(id: string = randomBytes(4).toString('hex')) {
    this.id = id;
  }
}
