import { Column, Entity, PrimaryColumn } from 'typeorm';
import { epochMsTransformer } from '../epoch-ms.transformer.js';

/** A session deleted at `deletedAt`: messages accepted before then are not stored again. */
@Entity('deleted_sessions')
export class DeletedSessionEntity {
  @PrimaryColumn({ type: 'varchar', length: 128 })
  id: string;

  @Column({ name: 'deleted_at', type: 'bigint', transformer: epochMsTransformer })
  deletedAt: number;
}
