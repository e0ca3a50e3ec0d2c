import type { Readable } from 'node:stream';

/** What a scan found. */
export type ScanResult = { readonly clean: true } | { readonly clean: false; readonly signature: string };

/**
 * Checks file contents for malware before they are stored. Throws when it
 * cannot decide (scanner down, timeout): uploads then fail closed with 503.
 */
export interface Scanner {
  /** A short name for logs, e.g. `clamav`. */
  readonly kind: string;
  /** Reads `content` to its end (streaming) and reports what it found. */
  scan(content: Readable): Promise<ScanResult>;
}

/** The scanner could not check a file. */
export class ScanError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ScanError';
  }
}
