export type { ApiProxy, ApiProxyOptions, ApiProxyRequestInfo } from './api.js';
export { createApiProxy, DEFAULT_API_TIMEOUT_MS, DEFAULT_MAX_PROXY_BODY_BYTES } from './api.js';
export type { HubProxy, HubProxyOptions } from './hub.js';
export { createHubProxy } from './hub.js';
export { sanitizeNegotiateResponse } from './negotiate.js';
export { API_MOUNT, BFF_HUB_PATH } from './shared.js';
