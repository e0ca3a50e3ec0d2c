import { createRequire } from 'node:module';

/** The DOM surface the tests use to edit captured responses (see samlify.ts for why it is declared here). */
export interface TestNode {
  readonly nodeType: number;
  textContent: string | null;
  cloneNode(deep: boolean): TestNode;
  appendChild(node: TestNode): TestNode;
  removeChild(node: TestNode): TestNode;
  insertBefore(node: TestNode, before: TestNode | null): TestNode;
  replaceChild(node: TestNode, old: TestNode): TestNode;
}

export interface TestElement extends TestNode {
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  getElementsByTagNameNS(namespace: string, localName: string): ArrayLike<TestElement>;
}

export interface TestDocument extends TestNode {
  readonly documentElement: TestElement;
  createElementNS(namespace: string, qualifiedName: string): TestElement;
  getElementsByTagNameNS(namespace: string, localName: string): ArrayLike<TestElement>;
}

const xmldom = createRequire(import.meta.url)('@xmldom/xmldom') as {
  DOMParser: new () => { parseFromString(xml: string, mimeType: string): TestDocument };
  XMLSerializer: new () => { serializeToString(node: TestNode): string };
};

/** Parses XML for editing in a test. */
export function parseTestXml(xml: string): TestDocument {
  return new xmldom.DOMParser().parseFromString(xml, 'text/xml');
}

/** Serializes an edited document. */
export function serializeTestXml(document: TestDocument): string {
  return new xmldom.XMLSerializer().serializeToString(document);
}
