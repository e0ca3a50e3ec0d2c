import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/inquiries`. */
export const InquiriesCodes = registerProblemCodes('@idt/inquiries', {
  'Inquiry.NotFound': {
    kind: 'NotFound',
    description: 'No such inquiry in your organization, or not one you may see.',
  },
  'Inquiry.CommentNotFound': {
    kind: 'NotFound',
    description: 'No such comment on the inquiry, or not one you may see.',
  },
  'Inquiries.InvalidStatusTransition': {
    kind: 'BusinessRule',
    description: 'Inquiries move New → Reviewed → Contacted → Closed, one step at a time.',
  },
});
