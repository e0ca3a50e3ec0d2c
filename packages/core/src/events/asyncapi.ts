import { z } from 'zod';
import { compareCodeUnits } from '../compare.js';
import { IDT_ICON_LINK } from '../http/favicon.js';
import { joinMarkup, markup, type SafeHtml, unsafeRaw } from '../http/markup.js';
import { html, json, text } from '../http/responses.js';
import { defineRoute, type Route } from '../http/route.js';
import type { EventCatalog, EventDefinition } from './types.js';

type JsonSchema = Record<string, unknown>;
type CatalogHandler = EventCatalog['handlers'][number];

/** Options of {@link createAsyncApiRoutes}. */
export interface AsyncApiOptions {
  /** The events and handlers to describe, read on every request (e.g. `() => bus.catalog()`). */
  readonly catalog: () => EventCatalog;
  /** The public base URL of the service, prefix included; identifies the application in the document. */
  readonly serverUrl: string;
  /** The deployment path prefix, for the viewer's links. */
  readonly pathPrefix?: string;
  /** The document title; `idt events` by default. */
  readonly title?: string;
  /** The document description. */
  readonly description?: string;
}

/** A generated AsyncAPI 3.0 document. */
export interface AsyncApiDocument {
  asyncapi: '3.0.0';
  id: string;
  info: { title: string; version: string; description?: string };
  defaultContentType: 'application/json';
  channels: Record<string, Record<string, unknown>>;
  operations: Record<string, Record<string, unknown>>;
  components: { messages: Record<string, Record<string, unknown>>; schemas: Record<string, JsonSchema> };
}

const DEFAULT_DESCRIPTION =
  'The integration events of this service. Each event is written to a durable outbox in the transaction of the change ' +
  'that caused it and delivered in process, at least once and in no particular order, to every handler subscribed ' +
  'when it was written. Message headers describe the envelope handlers receive beside the payload.';

/** The envelope fields a handler receives beside the payload, as message headers. */
const ENVELOPE_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'The envelope of a delivered event.',
  properties: {
    id: { type: 'string', format: 'uuid', description: 'The event id (UUIDv7).' },
    type: { type: 'string', description: 'The event type.' },
    occurredAt: { type: 'string', format: 'date-time', description: 'When the event was written (ISO 8601 UTC).' },
    attempt: { type: 'integer', minimum: 1, description: '1 on the first delivery to a handler, then 2, 3… on retries.' },
  },
  required: ['id', 'type', 'occurredAt', 'attempt'],
};

/** A key AsyncAPI accepts for channels, operations and components (`^[a-zA-Z0-9.\-_]+$`), unique within `taken`. */
function keyFor(raw: string, taken: Set<string>): string {
  const base = raw.replace(/[^a-zA-Z0-9.\-_]/g, '_') || '_';
  let key = base;
  for (let n = 2; taken.has(key); n++) key = `${base}_${n}`;
  taken.add(key);
  return key;
}

/** The JSON Schema (draft 2020-12, `$schema` left out) of an event payload. */
function payloadSchema(event: EventDefinition): JsonSchema {
  try {
    const schema = z.toJSONSchema(event.schema, { target: 'draft-2020-12', unrepresentable: 'any' }) as JsonSchema;
    delete schema.$schema;
    return schema;
  } catch {
    return { description: 'The payload schema cannot be expressed as JSON Schema.' };
  }
}

function sortedEvents(catalog: EventCatalog): EventDefinition[] {
  return [...catalog.events].sort((a, b) => compareCodeUnits(a.type, b.type));
}

/**
 * Generates the AsyncAPI 3.0 document of an event catalog: one channel per
 * event type (its address is the type) carrying one message whose payload is
 * the event's JSON Schema, a `send` operation per publishing module and
 * event, and a `receive` operation per handler.
 *
 * @example
 * const document = generateAsyncApiDocument(bus.catalog(), { serverUrl: config.publicBaseUrl });
 */
export function generateAsyncApiDocument(
  catalog: EventCatalog,
  options: Pick<AsyncApiOptions, 'serverUrl' | 'title' | 'description'>,
): AsyncApiDocument {
  const channels: AsyncApiDocument['channels'] = {};
  const operations: AsyncApiDocument['operations'] = {};
  const messages: AsyncApiDocument['components']['messages'] = {};
  const channelKeys = new Set<string>();
  const operationKeys = new Set<string>();
  const messageKeys = new Set<string>();
  /** Per event type: the channel key and, when the event is registered, its message key. */
  const refs = new Map<string, { channel: string; message?: string }>();

  for (const event of sortedEvents(catalog)) {
    if (refs.has(event.type)) continue;
    const channel = keyFor(event.type, channelKeys);
    const message = keyFor(event.type, messageKeys);
    refs.set(event.type, { channel, message });
    messages[message] = {
      name: event.type,
      title: event.type,
      summary: event.description,
      contentType: 'application/json',
      headers: { $ref: '#/components/schemas/EventEnvelope' },
      payload: payloadSchema(event),
      'x-idt-publisher': event.module,
    };
    channels[channel] = {
      address: event.type,
      title: event.type,
      description: event.description,
      messages: { [message]: { $ref: `#/components/messages/${message}` } },
    };
    const send = keyFor(`${event.module}.send.${event.type}`, operationKeys);
    operations[send] = {
      action: 'send',
      channel: { $ref: `#/channels/${channel}` },
      title: `${event.module} publishes ${event.type}`,
      summary: event.description,
      messages: [{ $ref: `#/channels/${channel}/messages/${message}` }],
      'x-idt-module': event.module,
    };
  }

  const handlers = [...catalog.handlers].sort((a, b) => compareCodeUnits(a.name, b.name));
  for (const handler of handlers) {
    let ref = refs.get(handler.event);
    if (!ref) {
      // A handler of an event the catalog does not list: keep the consumer visible.
      ref = { channel: keyFor(handler.event, channelKeys) };
      refs.set(handler.event, ref);
      channels[ref.channel] = { address: handler.event, title: handler.event, description: 'Not a registered event.' };
    }
    const operation: Record<string, unknown> = {
      action: 'receive',
      channel: { $ref: `#/channels/${ref.channel}` },
      title: handler.name,
      summary: `${handler.module} handles ${handler.event}`,
      'x-idt-module': handler.module,
      'x-idt-handler': handler.name,
    };
    if (handler.description) operation.description = handler.description;
    if (ref.message) operation.messages = [{ $ref: `#/channels/${ref.channel}/messages/${ref.message}` }];
    operations[keyFor(handler.name, operationKeys)] = operation;
  }

  return {
    asyncapi: '3.0.0',
    id: options.serverUrl,
    info: {
      title: options.title ?? 'idt events',
      version: '1',
      description: options.description ?? DEFAULT_DESCRIPTION,
    },
    defaultContentType: 'application/json',
    channels,
    operations,
    components: { messages, schemas: { EventEnvelope: ENVELOPE_SCHEMA } },
  };
}

/** A Mermaid label: quoted, with the characters Mermaid interprets written as entity codes. */
function mermaidLabel(value: string): string {
  const escaped = value
    .replace(/[\r\n]+/g, ' ')
    .replace(/#/g, '#35;')
    .replace(/"/g, '#quot;')
    .replace(/</g, '#lt;')
    .replace(/>/g, '#gt;');
  return `"${escaped}"`;
}

/**
 * A Mermaid `flowchart LR` of an event catalog: publishing module → event →
 * consuming module / handler.
 *
 * @example
 * generateEventFlowchart(bus.catalog());
 * // flowchart LR
 * //   P0["identity"]
 * //   E0{{"UserSessionEvictedEvent"}}
 * //   H0["oidc / oidc.revoke-evicted-session"]
 * //   P0 --> E0
 * //   E0 --> H0
 */
export function generateEventFlowchart(catalog: EventCatalog): string {
  const lines = ['flowchart LR'];
  const events = sortedEvents(catalog);
  const handlers = [...catalog.handlers].sort((a, b) => compareCodeUnits(a.name, b.name));
  if (events.length === 0 && handlers.length === 0) {
    lines.push(`  empty[${mermaidLabel('No events are registered')}]`);
    return `${lines.join('\n')}\n`;
  }
  const modules = new Map<string, string>();
  const eventNodes = new Map<string, string>();
  const edges: string[] = [];
  lines.push('  %% publishing module --> event --> consuming module / handler');
  for (const event of events) {
    if (!modules.has(event.module)) {
      const id = `P${modules.size}`;
      modules.set(event.module, id);
      lines.push(`  ${id}[${mermaidLabel(event.module)}]`);
    }
  }
  const eventNode = (type: string) => {
    let id = eventNodes.get(type);
    if (!id) {
      id = `E${eventNodes.size}`;
      eventNodes.set(type, id);
      lines.push(`  ${id}{{${mermaidLabel(type)}}}`);
    }
    return id;
  };
  for (const event of events) {
    const before = eventNodes.has(event.type);
    const id = eventNode(event.type);
    if (!before) edges.push(`  ${modules.get(event.module)} --> ${id}`);
  }
  handlers.forEach((handler: CatalogHandler, index) => {
    const id = `H${index}`;
    lines.push(`  ${id}[${mermaidLabel(`${handler.module} / ${handler.name}`)}]`);
    edges.push(`  ${eventNode(handler.event)} --> ${id}`);
  });
  lines.push(...edges);
  return `${lines.join('\n')}\n`;
}

const VIEWER_CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const VIEWER_STYLE = `
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1rem 1.5rem 3rem; color: #1d2433; }
h1 { margin-bottom: 0.25rem; } h2 { margin-top: 2.5rem; border-top: 1px solid #d8dce6; padding-top: 1rem; }
code, pre { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { background: #f4f6fa; border: 1px solid #d8dce6; border-radius: 6px; padding: 0.75rem; overflow-x: auto; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 0.35rem 0.6rem; border-bottom: 1px solid #e3e6ee; vertical-align: top; }
.meta { color: #5a6478; } .none { color: #8a93a6; font-style: italic; }
`;

/** The server-rendered catalog page: every event with its publisher, consumers and payload schema. */
function renderViewer(catalog: EventCatalog, document: AsyncApiDocument, prefix: string): SafeHtml {
  const events = sortedEvents(catalog);
  const handlers = [...catalog.handlers].sort((a, b) => compareCodeUnits(a.name, b.name));
  const anchors = new Map(events.map((event, index) => [event.type, `event-${index}`]));
  const consumersOf = (type: string) => handlers.filter((handler) => handler.event === type);
  const orphans = handlers.filter((handler) => !anchors.has(handler.event));

  const consumerTable = (list: CatalogHandler[], withEvent = false) =>
    list.length === 0
      ? markup`<p class="none">No handler is subscribed.</p>`
      : markup`<table>
<thead><tr><th>Handler</th><th>Module</th>${withEvent && markup`<th>Event</th>`}<th>Description</th></tr></thead>
<tbody>
${joinMarkup(
  list.map(
    (handler) =>
      markup`<tr><td><code>${handler.name}</code></td><td>${handler.module}</td>${
        withEvent && markup`<td><code>${handler.event}</code></td>`
      }<td>${handler.description ? handler.description : markup`<span class="none">none</span>`}</td></tr>`,
  ),
  '\n',
)}
</tbody>
</table>`;

  const sections = events.map((event) => {
    const schema = JSON.stringify(payloadSchema(event), null, 2);
    return markup`<section id="${anchors.get(event.type) ?? ''}">
<h2><code>${event.type}</code></h2>
<p>${event.description}</p>
<p class="meta">Channel <code>${event.type}</code> · published by the <strong>${event.module}</strong> module</p>
<h3>Consumers</h3>
${consumerTable(consumersOf(event.type))}
<h3>Payload schema</h3>
<pre>${schema}</pre>
</section>`;
  });

  const title = document.info.title;
  return markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
${unsafeRaw(IDT_ICON_LINK)}
<style>${unsafeRaw(VIEWER_STYLE)}</style>
</head>
<body>
<header>
<h1>${title}</h1>
<p class="meta">AsyncAPI ${document.asyncapi} · version ${document.info.version} · ${events.length} event(s), ${
    handlers.length
  } handler(s) · <a href="${`${prefix}/asyncapi/v1.json`}">AsyncAPI document</a> · <a href="${`${prefix}/asyncapi/v1/flows`}">Mermaid flows</a></p>
<p>${document.info.description ?? ''}</p>
</header>
<nav>
<h2>Events</h2>
${
  events.length === 0
    ? markup`<p class="none">No events are registered.</p>`
    : markup`<ul>
${joinMarkup(
  events.map(
    (event) =>
      markup`<li><a href="#${anchors.get(event.type) ?? ''}"><code>${event.type}</code></a> <span class="meta">(${event.module}, ${
        consumersOf(event.type).length
      } consumer(s))</span></li>`,
  ),
  '\n',
)}
</ul>`
}
</nav>
<main>
${joinMarkup(sections, '\n')}
${
  orphans.length > 0 &&
  markup`<section>
<h2>Handlers of unregistered events</h2>
${consumerTable(orphans, true)}
</section>`
}
<section>
<h2>Flows</h2>
<p class="meta">Mermaid source (<code>flowchart LR</code>): publishing module → event → consuming module / handler.</p>
<pre>${generateEventFlowchart(catalog)}</pre>
</section>
</main>
</body>
</html>
`;
}

/**
 * The development event catalog, hidden from the OpenAPI document:
 *
 * - `GET /asyncapi`: a server-rendered page listing every event (channel,
 *   publisher, consumers, payload schema); no script, no other origin;
 * - `GET /asyncapi/v1.json`: the AsyncAPI 3.0 document
 *   ({@link generateAsyncApiDocument});
 * - `GET /asyncapi/v1/flows`: a Mermaid flowchart of publishers, events and
 *   consumers ({@link generateEventFlowchart}), as plain text.
 *
 * Mount them in Development only.
 *
 * @example
 * if (config.environment === 'Development') {
 *   routes.push(...createAsyncApiRoutes({ catalog: () => bus.catalog(), serverUrl: config.publicBaseUrl, pathPrefix: config.pathPrefix }));
 * }
 */
export function createAsyncApiRoutes(options: AsyncApiOptions): Route[] {
  const prefix = options.pathPrefix ?? '';
  const document = (catalog: EventCatalog) =>
    generateAsyncApiDocument(catalog, {
      serverUrl: options.serverUrl,
      ...(options.title !== undefined ? { title: options.title } : {}),
      ...(options.description !== undefined ? { description: options.description } : {}),
    });
  return [
    defineRoute({
      method: 'GET',
      path: '/asyncapi',
      operationId: 'getAsyncApiViewer',
      summary: 'The event catalog, as a page',
      auth: 'anonymous',
      ratePolicy: false,
      hidden: true,
      responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
      handler: () => {
        const catalog = options.catalog();
        return html(renderViewer(catalog, document(catalog), prefix), {
          headers: { 'content-security-policy': VIEWER_CSP },
        });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/asyncapi/v1.json',
      operationId: 'getAsyncApiDocument',
      summary: 'The AsyncAPI 3.0 document of the events',
      auth: 'anonymous',
      ratePolicy: false,
      hidden: true,
      responses: { 200: { description: 'AsyncAPI 3.0 document' } },
      handler: () => json(document(options.catalog()), { headers: { 'cache-control': 'no-cache' } }),
    }),
    defineRoute({
      method: 'GET',
      path: '/asyncapi/v1/flows',
      operationId: 'getEventFlows',
      summary: 'The event flows as a Mermaid flowchart',
      auth: 'anonymous',
      ratePolicy: false,
      hidden: true,
      responses: { 200: { description: 'Mermaid source', contentType: 'text/plain' } },
      handler: () => text(generateEventFlowchart(options.catalog()), { headers: { 'cache-control': 'no-cache' } }),
    }),
  ];
}
