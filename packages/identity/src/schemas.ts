import { z } from 'zod';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords.js';

/** An e-mail address: trimmed, lowercased, at most 254 characters. */
export const EmailSchema = z
  .string({ error: 'Enter an e-mail address.' })
  .trim()
  .min(1, 'Enter an e-mail address.')
  .max(254, 'An e-mail address has at most 254 characters.')
  .pipe(z.email({ error: 'Enter a valid e-mail address.' }))
  .transform((value) => value.toLowerCase())
  .meta({ format: 'email', example: 'ada@example.com' });

/**
 * A new password's shape: 12 to 256 characters. Services then apply the
 * password policy (configured minimum, common, weak, personal and breached passwords).
 */
export const PasswordSchema = z
  .string({ error: 'Enter a password.' })
  .min(PASSWORD_MIN_LENGTH, `A password has at least ${PASSWORD_MIN_LENGTH} characters.`)
  .max(PASSWORD_MAX_LENGTH, `A password has at most ${PASSWORD_MAX_LENGTH} characters.`)
  .meta({ format: 'password' });

/** A person's first or last name: trimmed, 1 to 100 characters, no control characters. */
export const PersonNameSchema = z
  .string({ error: 'Enter a name.' })
  .trim()
  .min(1, 'Enter a name.')
  .max(100, 'A name has at most 100 characters.')
  .regex(/^[^\p{Cc}]*$/u, 'A name cannot contain control characters.');

/** An organization name: trimmed, 1 to 200 characters, with at least one letter or digit. */
export const OrganizationNameSchema = z
  .string({ error: 'Enter an organization name.' })
  .trim()
  .min(1, 'Enter an organization name.')
  .max(200, 'An organization name has at most 200 characters.')
  .regex(/[\p{L}\p{N}]/u, 'An organization name needs at least one letter or digit.')
  .regex(/^[^\p{Cc}]*$/u, 'An organization name cannot contain control characters.');
