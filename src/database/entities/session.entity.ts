import { Column, Entity, PrimaryColumn } from 'typeorm';
import { epochMsTransformer } from '../epoch-ms.transformer.js';
import { type JsonColumnValue } from './message.entity.js';

@Entity('sessions')
export class SessionEntity {
  @PrimaryColumn({ type: 'varchar', length: 128 })
  id: string;

  @Column({ type: 'varchar', length: 512, nullable: true })
  title: string | null;

  @Column({ type: 'simple-json', nullable: true })
  metadata: JsonColumnValue;

  @Column({ name: 'created_at', type: 'bigint', transformer: epochMsTransformer })
  createdAt: number;

  @Column({ name: 'updated_at', type: 'bigint', transformer: epochMsTransformer })
  updatedAt: number;

  @Column({ name: 'message_count', type: 'integer', default: 0 })
  messageCount: number;

  /** Grows by one for every stored message; caches compare it to spot writes made elsewhere. */
  @Column({ type: 'bigint', default: 0, transformer: epochMsTransformer })
  revision: number;
}
