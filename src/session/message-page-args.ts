import { type PipeTransform } from '@nestjs/common';
import { getArgumentValues, getNamedType, isObjectType, type GraphQLResolveInfo } from 'graphql';
import { decodeMessageCursor } from '../common/graphql/message.mapper.js';
import { TwoWayPageArgs, pageRequestOf } from '../common/pagination/page.args.js';
import { type PageRequest } from '../common/pagination/page-request.js';
import { fieldSelections } from './selections.js';

/** The page of messages `args` ask for; BAD_USER_INPUT for both counts or a foreign cursor. */
export function messagePageRequest(args: TwoWayPageArgs): PageRequest<string> {
  return pageRequestOf(args, decodeMessageCursor);
}

/**
 * Checks the arguments of every `messages` this session field selects, as that field's own
 * resolution will (`pipe`, the global validation pipe, then the cursors), before the session is
 * read. The executor resolves `messages` only after its session, so without this, input that
 * can never work would answer DATABASE_UNAVAILABLE during an outage, and a client would retry
 * it for ever; checked first, it is BAD_USER_INPUT, database or not.
 */
export async function checkMessagesArgs(
  info: GraphQLResolveInfo,
  pipe: PipeTransform,
): Promise<void> {
  const type = getNamedType(info.returnType);
  const field = isObjectType(type) ? type.getFields().messages : undefined;
  if (!field) return;
  for (const node of fieldSelections(info, 'messages')) {
    // Variables were coerced by the executor already; this only fills in literals and defaults.
    const values = getArgumentValues(field, node, info.variableValues);
    const args = (await pipe.transform(values, {
      type: 'body',
      metatype: TwoWayPageArgs,
    })) as TwoWayPageArgs;
    messagePageRequest(args);
  }
}
