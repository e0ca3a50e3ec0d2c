/** XML namespaces of SAML 2.0 and XML signatures. */
export const NS = {
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
} as const;

/**
 * The part of a DOM node idt reads. Declared here rather than taken from
 * TypeScript's `dom` library, which `@xmldom/xmldom`'s typings would pull
 * into every package of the program (and whose `fetch` types clash with
 * XmlNode's).
 */
export interface XmlNode {
  readonly nodeType: number;
  readonly nodeName: string;
  readonly nodeValue: string | null;
  readonly firstChild: XmlNode | null;
  readonly nextSibling: XmlNode | null;
  readonly parentNode: XmlNode | null;
}

/** The part of a DOM element idt reads. */
export interface XmlElement extends XmlNode {
  readonly localName: string | null;
  readonly namespaceURI: string | null;
  getAttribute(name: string): string | null;
  getAttributeNS(namespace: string | null, localName: string): string | null;
  hasAttribute(name: string): boolean;
}

/** The part of a DOM document idt reads. */
export interface XmlDocument extends XmlNode {
  readonly documentElement: XmlElement;
}

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;
const CDATA_SECTION_NODE = 4;
const COMMENT_NODE = 8;

/** Whether an element has this namespace and local name. */
export function isElement(node: XmlNode | null | undefined, namespace: string, localName: string): node is XmlElement {
  return (
    node != null &&
    node.nodeType === ELEMENT_NODE &&
    (node as XmlElement).namespaceURI === namespace &&
    (node as XmlElement).localName === localName
  );
}

/** The child elements of `parent` with this namespace and local name, in document order. */
export function children(parent: XmlNode, namespace: string, localName: string): XmlElement[] {
  const found: XmlElement[] = [];
  for (let node = parent.firstChild; node !== null; node = node.nextSibling) {
    if (isElement(node, namespace, localName)) found.push(node);
  }
  return found;
}

/** The first child element with this namespace and local name. */
export function child(parent: XmlNode, namespace: string, localName: string): XmlElement | undefined {
  return children(parent, namespace, localName)[0];
}

/** Every descendant element with this namespace and local name (the node itself excluded). */
export function descendants(parent: XmlNode, namespace: string, localName: string): XmlElement[] {
  const found: XmlElement[] = [];
  const walk = (node: XmlNode) => {
    for (let next = node.firstChild; next !== null; next = next.nextSibling) {
      if (isElement(next, namespace, localName)) found.push(next);
      if (next.nodeType === ELEMENT_NODE) walk(next);
    }
  };
  walk(parent);
  return found;
}

/** Every descendant element of `parent` (the node itself excluded). */
export function allElements(parent: XmlNode): XmlElement[] {
  const found: XmlElement[] = [];
  const walk = (node: XmlNode) => {
    for (let next = node.firstChild; next !== null; next = next.nextSibling) {
      if (next.nodeType === ELEMENT_NODE) {
        found.push(next as XmlElement);
        walk(next);
      }
    }
  };
  walk(parent);
  return found;
}

/** Whether a comment sits anywhere under `node`. */
export function containsComment(node: XmlNode): boolean {
  for (let next = node.firstChild; next !== null; next = next.nextSibling) {
    if (next.nodeType === COMMENT_NODE) return true;
    if (next.nodeType === ELEMENT_NODE && containsComment(next)) return true;
  }
  return false;
}

/** The text of an element: its text and CDATA children joined, trimmed; child elements are ignored. */
export function textOf(element: XmlElement | undefined): string {
  if (!element) return '';
  let text = '';
  for (let node = element.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === TEXT_NODE || node.nodeType === CDATA_SECTION_NODE) text += node.nodeValue ?? '';
  }
  return text.trim();
}

/** An attribute's value, or `undefined` when absent (xmldom answers `''` for both). */
export function attribute(element: XmlElement | undefined, name: string): string | undefined {
  if (!element?.hasAttribute(name)) return undefined;
  return element.getAttribute(name) ?? undefined;
}
