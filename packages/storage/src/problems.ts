import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/storage`. */
export const StorageCodes = registerProblemCodes('@idt/storage', {
  'Storage.FileTooLarge': {
    kind: 'PayloadTooLarge',
    description: 'The upload is larger than the size limit.',
  },
  'Storage.FileNotFound': {
    kind: 'NotFound',
    description: 'No such file in your organization.',
  },
  'Storage.ScanUnavailable': {
    kind: 'Unavailable',
    description: 'The virus scanner could not check the file; nothing was stored. Try again later.',
  },
});
