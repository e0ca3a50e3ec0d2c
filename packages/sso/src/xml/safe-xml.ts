import { createRequire } from 'node:module';
import type { XmlDocument, XmlElement } from './dom.js';

interface XmlParser {
  parseFromString(xml: string, mimeType: string): XmlDocument;
}
interface XmlErrorHandler {
  warning(message: string): void;
  error(message: string): void;
  fatalError(message: string): void;
}

// Loaded through require so its typings, which pull TypeScript's whole `dom` library into the
// program, stay out of it (see XmlNode). @xmldom/xmldom is node-saml's own parser.
const { DOMParser } = createRequire(import.meta.url)('@xmldom/xmldom') as {
  DOMParser: new (options: { errorHandler: XmlErrorHandler }) => XmlParser;
};

/** Why a document was not parsed. */
export type UnsafeXmlReason = 'too-large' | 'doctype' | 'malformed';

/** Thrown by {@link parseXmlSafely}; `reason` is stable, the message is for logs only. */
export class UnsafeXmlError extends Error {
  /** Why the document was refused. */
  readonly reason: UnsafeXmlReason;

  constructor(reason: UnsafeXmlReason, message: string) {
    super(message);
    this.name = 'UnsafeXmlError';
    this.reason = reason;
  }
}

/** Options of {@link parseXmlSafely}. */
export interface ParseXmlOptions {
  /** The largest document accepted, in characters. Defaults to 1 MiB. */
  readonly maxLength?: number;
}

const ELEMENT_NODE = 1;
const PROCESSING_INSTRUCTION_NODE = 7;
const DOCUMENT_TYPE_NODE = 10;

/**
 * Parses XML that came from outside (IdP metadata, SAML messages) with
 * `@xmldom/xmldom`, refusing what SAML never needs and attackers love:
 * a DOCTYPE or entity declaration (entity expansion, external entities),
 * processing instructions other than the XML declaration, and anything the
 * parser reports as an error instead of silently repairing it.
 *
 * @throws {@link UnsafeXmlError}
 */
export function parseXmlSafely(xml: string, options: ParseXmlOptions = {}): XmlDocument {
  const maxLength = options.maxLength ?? 1_048_576;
  if (xml.length > maxLength) throw new UnsafeXmlError('too-large', `The document is over ${maxLength} characters`);
  // Refused before parsing, whatever the parser would do with them.
  if (/<!DOCTYPE/i.test(xml) || /<!ENTITY/i.test(xml)) {
    throw new UnsafeXmlError('doctype', 'Document type and entity declarations are not accepted');
  }
  const fail = (message: string) => {
    throw new UnsafeXmlError('malformed', message);
  };
  let document: XmlDocument;
  try {
    document = new DOMParser({ errorHandler: { warning: () => {}, error: fail, fatalError: fail } }).parseFromString(
      xml,
      'text/xml',
    );
  } catch (error) {
    if (error instanceof UnsafeXmlError) throw error;
    throw new UnsafeXmlError('malformed', error instanceof Error ? error.message : 'The document is not XML');
  }
  let root: XmlElement | undefined;
  for (let node = document.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === DOCUMENT_TYPE_NODE) throw new UnsafeXmlError('doctype', 'Document types are not accepted');
    if (node.nodeType === PROCESSING_INSTRUCTION_NODE && node.nodeName.toLowerCase() !== 'xml') {
      throw new UnsafeXmlError('malformed', 'Processing instructions are not accepted');
    }
    if (node.nodeType === ELEMENT_NODE) root = node as XmlElement;
  }
  if (!root) throw new UnsafeXmlError('malformed', 'The document has no root element');
  return document;
}
