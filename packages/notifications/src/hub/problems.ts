import { registerProblemCodes } from '@idt/problem';

/** Error codes of the realtime hub (`/hubs/realtime`). */
export const RealtimeCodes = registerProblemCodes('@idt/notifications/hub', {
  'Realtime.ConnectionNotFound': {
    kind: 'NotFound',
    description: 'The connection token is unknown, expired or belongs to another caller: negotiate again.',
  },
  'Realtime.ConnectionInUse': {
    kind: 'Conflict',
    description: 'The connection token was already used (it is single-use): negotiate again.',
  },
  'Realtime.Unavailable': {
    kind: 'Unavailable',
    description: 'The realtime hub of this instance is shutting down; connect again shortly.',
  },
  'Realtime.WebSocketRequired': {
    kind: 'Validation',
    description: 'The hub speaks WebSockets only: connect with an Upgrade: websocket request.',
  },
});
