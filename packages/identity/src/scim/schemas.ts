/** The core User schema (RFC 7643 §4.1). */
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
/** The enterprise User extension (RFC 7643 §4.3). */
export const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
/** The core Group schema (RFC 7643 §4.2). */
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
/** List responses (RFC 7644 §3.4.2). */
export const LIST_RESPONSE_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
/** PATCH requests (RFC 7644 §3.5.2). */
export const PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SERVICE_PROVIDER_CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

/** The most resources one list response holds (`filter.maxResults`); larger `count`s are lowered to it. */
export const MAX_RESULTS = 200;

/** The largest SCIM request body, in bytes (1 MiB; `bulk.maxPayloadSize` says the same). */
export const MAX_BODY_BYTES = 1024 * 1024;

type Attribute = Record<string, unknown>;

function attribute(name: string, extra: Partial<Attribute> = {}): Attribute {
  return {
    name,
    type: 'string',
    multiValued: false,
    required: false,
    caseExact: false,
    mutability: 'readWrite',
    returned: 'default',
    uniqueness: 'none',
    ...extra,
  };
}

const complex = (name: string, subAttributes: Attribute[], extra: Partial<Attribute> = {}) =>
  attribute(name, { type: 'complex', subAttributes, ...extra });

const multiValued = (name: string, extra: Partial<Attribute> = {}) =>
  complex(name, [attribute('value'), attribute('display'), attribute('type'), attribute('primary', { type: 'boolean' })], {
    multiValued: true,
    ...extra,
  });

const userAttributes: Attribute[] = [
  attribute('userName', { required: true, uniqueness: 'server' }),
  complex('name', [attribute('formatted'), attribute('familyName'), attribute('givenName'), attribute('middleName')]),
  attribute('displayName'),
  attribute('nickName'),
  attribute('title'),
  attribute('userType'),
  attribute('preferredLanguage'),
  attribute('locale'),
  attribute('timezone'),
  attribute('active', { type: 'boolean' }),
  multiValued('emails'),
  multiValued('phoneNumbers'),
  multiValued('groups', { mutability: 'readOnly' }),
];

const enterpriseAttributes: Attribute[] = [
  attribute('employeeNumber'),
  attribute('costCenter'),
  attribute('organization'),
  attribute('division'),
  attribute('department'),
  complex('manager', [attribute('value'), attribute('displayName', { mutability: 'readOnly' })]),
];

const groupAttributes: Attribute[] = [
  attribute('displayName', { required: true, uniqueness: 'server' }),
  complex(
    'members',
    [attribute('value', { mutability: 'immutable' }), attribute('display', { mutability: 'readOnly' }), attribute('type')],
    { multiValued: true },
  ),
];

/** The discovery documents of `/scim/v2`, with `meta.location` under `base` (the SCIM base URL). */
export function discoveryDocuments(base: string) {
  const schema = (id: string, name: string, description: string, attributes: Attribute[]) => ({
    schemas: [SCHEMA_SCHEMA],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  const schemas = [
    schema(USER_SCHEMA, 'User', 'User Account', userAttributes),
    schema(ENTERPRISE_USER_SCHEMA, 'EnterpriseUser', 'Enterprise User', enterpriseAttributes),
    schema(GROUP_SCHEMA, 'Group', 'Group', groupAttributes),
  ];
  const resourceTypes = [
    {
      schemas: [RESOURCE_TYPE_SCHEMA],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'A member of the organization',
      schema: USER_SCHEMA,
      schemaExtensions: [{ schema: ENTERPRISE_USER_SCHEMA, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: [RESOURCE_TYPE_SCHEMA],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'A directory group; its members get the roles mapped to its name',
      schema: GROUP_SCHEMA,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ];
  const serviceProviderConfig = {
    schemas: [SERVICE_PROVIDER_CONFIG_SCHEMA],
    documentationUri: 'https://github.com/idt/idt/blob/main/docs/scim.md',
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: MAX_BODY_BYTES },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'SCIM bearer token',
        description: 'A token of the organization from /v1/identity/organizations/{orgId}/scim/tokens',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
  return { schemas, resourceTypes, serviceProviderConfig };
}
