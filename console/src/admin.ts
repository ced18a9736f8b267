// The administration pages' calls to the outboxd API (action modes,
// credentials, connectors, webhooks, databases, Slack approvals), through
// api.ts's request so the token and errors are handled in one place.
import { request, type Connector } from "./api";

const enc = encodeURIComponent;

/** Modes are overrides keyed "<source>:<action>". */
export type Modes = Record<string, string>;

export type Credential = {
  integration: string;
  user_id?: string;
  token_kind?: string;
  updated_by: string;
  created_at: string;
  updated_at: string;
  note?: string;
};

/** CredentialProvider is a provider a credential may be stored for, whether or not one is. */
export type CredentialProvider = { integration: string; name?: string };

/** RiskPolicy sets the tiers of a connector's tools (R0–R4, or read, write, danger): a default and per tool. */
export type RiskPolicy = { default?: string; tools?: Record<string, string> };

export type ConnectorInput = {
  name?: string;
  url?: string;
  transport?: string;
  enabled?: boolean;
  auth?: { type: string; header_name?: string; secret?: string };
  risk_policy?: RiskPolicy;
};

export type ConnectorFull = Connector & { auth: { type: string; header_name?: string }; risk_policy?: RiskPolicy; created_by?: string; created_at?: string; updated_at?: string };

export type Webhook = {
  id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  failing_since: string | null;
  disabled_at: string | null;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
};

export type Delivery = {
  id: string;
  event_id: number;
  event_type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  last_latency_ms: number | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
};

export type Database = {
  id: string;
  source_id: string;
  name: string;
  host: string;
  database: string;
  statement_timeout: string;
  statement_timeout_ms: number;
  max_rows: number;
  created_by: string;
  created_at: string;
  updated_at: string;
};

export type DatabaseTest = { reachable: boolean; table_count: number; code?: string; error?: string };

export type DatabaseInput = { name?: string; url?: string; statement_timeout?: string; max_rows?: number };

export type SlackApprover = { user_id: string; role: string };
export type SlackSettings = { channel: string | null; approvers: Record<string, SlackApprover> | null };

export const WEBHOOK_EVENTS = ["action_approval_request", "action_approval_result", "action_completed"];

const modesPath = (automation?: string) => (automation ? "/v1/automations/" + enc(automation) + "/action-modes" : "/v1/action-modes");

export const admin = {
  getModes: (automation: string | undefined, etag: (e: string | null) => void) => request<Modes>("GET", modesPath(automation), undefined, { etag }),
  putModes: (automation: string | undefined, modes: Modes, ifMatch: string | null, etag: (e: string | null) => void) =>
    request<Modes>("PUT", modesPath(automation), modes, { ifMatch, etag }),

  credentials: () => request<{ credentials: Credential[]; providers: CredentialProvider[] }>("GET", "/v1/credentials"),
  putCredential: (integration: string, body: { token: string; token_kind?: string; user_id?: string }) =>
    request<{ credential: Credential }>("PUT", "/v1/credentials/" + enc(integration), body),
  deleteCredential: (integration: string, userID?: string) =>
    request<unknown>("DELETE", "/v1/credentials/" + enc(integration) + (userID ? "?user_id=" + enc(userID) : "")),

  createConnector: (body: ConnectorInput) => request<{ connector: ConnectorFull }>("POST", "/v1/connectors", body),
  updateConnector: (id: string, body: ConnectorInput) => request<{ connector: ConnectorFull }>("PATCH", "/v1/connectors/" + enc(id), body),
  deleteConnector: (id: string) => request<unknown>("DELETE", "/v1/connectors/" + enc(id)),

  webhooks: () => request<{ webhooks: Webhook[] }>("GET", "/v1/webhooks"),
  webhook: (id: string) => request<{ webhook: Webhook }>("GET", "/v1/webhooks/" + enc(id)),
  createWebhook: (body: { url: string; events: string[]; description: string }) => request<{ webhook: Webhook; secret: string }>("POST", "/v1/webhooks", body),
  updateWebhook: (id: string, body: Partial<Pick<Webhook, "url" | "events" | "description" | "enabled">>) =>
    request<{ webhook: Webhook }>("PATCH", "/v1/webhooks/" + enc(id), body),
  deleteWebhook: (id: string) => request<unknown>("DELETE", "/v1/webhooks/" + enc(id)),
  rotateWebhookSecret: (id: string) => request<{ webhook: Webhook; secret: string }>("POST", "/v1/webhooks/" + enc(id) + "/rotate-secret"),
  deliveries: (id: string) => request<{ deliveries: Delivery[] }>("GET", "/v1/webhooks/" + enc(id) + "/deliveries?limit=20"),

  databases: () => request<{ databases: Database[] }>("GET", "/v1/databases"),
  createDatabase: (body: DatabaseInput) => request<{ database: Database }>("POST", "/v1/databases", body),
  updateDatabase: (id: string, body: DatabaseInput) => request<{ database: Database }>("PATCH", "/v1/databases/" + enc(id), body),
  deleteDatabase: (id: string) => request<unknown>("DELETE", "/v1/databases/" + enc(id)),
  testDatabase: (id: string) => request<DatabaseTest>("POST", "/v1/databases/" + enc(id) + "/test"),

  // One ETag covers the channel and the approvers; each PUT sends it as If-Match.
  slack: (etag: (e: string | null) => void) => request<SlackSettings>("GET", "/v1/notifications/slack", undefined, { etag }),
  putSlackChannel: (channel: string | null, ifMatch: string | null, etag: (e: string | null) => void) =>
    request<SlackSettings>("PUT", "/v1/notifications/slack", { channel }, { ifMatch, etag }),
  putSlackApprovers: (approvers: Record<string, SlackApprover>, ifMatch: string | null, etag: (e: string | null) => void) =>
    request<SlackSettings>("PUT", "/v1/approvers/slack", approvers, { ifMatch, etag }),
};
