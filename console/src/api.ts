// Every call the console makes to the outboxd API lives in this module, so
// that the client can be checked against the API's OpenAPI document.
// The token is sent in the Authorization header only, never in a URL; a
// session signed in with the identity provider travels in its HttpOnly
// cookie, with its CSRF token in a header.

export type Invocation = {
  id: string;
  session_id: string | null;
  automation_id: string | null;
  user_id: string | null;
  requested_by: string;
  origin: "invoke" | "envelope" | "mcp";
  integration: string;
  action: string;
  risk_level: string;
  mode: string;
  mode_source: string;
  params: Record<string, unknown> | null;
  status: string;
  result: unknown;
  error: string | null;
  denied_reason: string | null;
  duration_ms: number | null;
  approved_by: string | null;
  approved_at: string | null;
  started_at: string | null;
  completed_at: string | null;
  expires_at: string | null;
  created_at: string;
  external_id: string | null;
  attempt: number;
  provider_waits: number;
  rate_bucket: string | null;
  conflict: boolean;
  dead_lettered_at: string | null;
  replay_count: number;
  grant_id?: string | null;
  // Pending invocations only (approvals.tsx).
  approvals?: { by: string; at: string }[];
  approvals_required?: number;
  approver_group?: string;
  can_approve?: boolean;
  /** What it will do, once rendered; GET /v1/invocations/{id} only. */
  preview?: InvocationPreview;
  edited?: boolean;
  params_original?: Record<string, unknown>;
  edits?: { by: string; at: string; digest: string; diff: { path: string; from?: unknown; to?: unknown }[] }[];
  intent?: { digest: string; short: string; approved_digest: string | null; changes?: string[] };
};

export type InvocationPreview = {
  status: "rendered" | "failed" | "unsupported";
  note?: string;
  rendered_at: string;
  preview?: {
    kind: "message" | "issue" | "diff" | "query" | "tool_args";
    title: string;
    text?: string;
    fields?: { name: string; value: string; description?: string }[];
    changes?: { field: string; before: string; after: string }[];
    plan?: { node: string; rows: number; startup_cost: number; total_cost: number; relations?: string[] };
    notes?: string[];
  };
};

export type TimelineEvent = {
  id: number;
  seq: number;
  type: string;
  from_status: string | null;
  to_status: string;
  actor: string | null;
  reason: string | null;
  created_at: string;
};

export type JSONSchema = {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JSONSchema>;
  required?: string[];
  items?: JSONSchema;
  enum?: unknown[];
  format?: string;
};

export type CatalogAction = {
  source: string;
  action: string;
  description: string;
  risk_level: string;
  mode: string;
  mode_source: string;
  params: JSONSchema;
  drifted?: boolean;
  /** disabled: listed, but not invocable now (a disabled plugin; with include=unavailable, a provider with no credential stored). */
  disabled?: boolean;
};

/** CatalogSource is a source of the catalog: ok, or why its actions are missing or disabled (no_credential, disabled, unreachable). */
export type CatalogSource = { source: string; name?: string; status: string; error?: string };

export type Envelope = {
  action_id: string;
  external_id: string;
  automation_id: string | null;
  tool: { name: string; source: string; action: string };
  args: unknown;
  risk: string | null;
  approval: string;
  constraints: { rate_bucket: string | null; must_run_before: string | null };
  result: { status: string; provider_id: string | null; error: string | null; output: unknown };
  mode: string;
  mode_source: string;
  invocation_status: string;
  expires_at: string | null;
  timestamps: { created_at: string; sent_at: string | null; completed_at: string | null };
};

export type StateStats = { count: number; oldest_at: string | null; age_seconds: number | null };
/** OrgQueue is the organization's own queue: its pause and its unfinished invocations by state. */
export type OrgQueue = { paused: boolean; paused_at: string | null; paused_by: string | null; states: Record<string, StateStats> };
export type Stats = {
  generated_at: string;
  queue: OrgQueue;
  in_flight: Record<string, { count: number; oldest_at: string }>;
  last_hour: {
    since: string;
    window_seconds: number;
    ended: Record<string, number>;
    throughput_per_minute: number;
    failure_rate: number | null;
    buckets: { start: string; completed: number; failed: number; other: number }[];
  };
  /** retention: per table, how long finished rows are kept (null: forever) and what retention deleted of this organization. */
  retention: RetentionStats[] | null;
};

export type RetentionStats = {
  table: string;
  keep_seconds: number | null;
  last_run_at: string | null;
  last_deleted: number;
  deleted_total: number;
};

export type RateBucket = {
  name: string;
  scope: string;
  rate: number;
  interval_seconds: number;
  burst: number;
  max_concurrency: number;
  states: { source?: string; tokens: number; blocked_until: string | null; leases: number }[];
};

export type QuietWindow = { bucket: string; time_zone: string; start: string; end: string };

export type Connector = {
  id: string;
  source_id: string;
  name: string;
  url: string;
  transport: string;
  enabled: boolean;
  auth: { type: string };
};

export type ConnectorDiagnosis = {
  reachable: boolean;
  protocol_version?: string;
  server_name?: string;
  tool_count?: number;
  errors?: string[];
};

export type ToolReview = {
  name: string;
  description: string;
  risk_level: string;
  hash: string;
  mode: string;
  mode_source: string;
  reviewed_mode?: string;
  reviewed_hash?: string;
  drifted: boolean;
};

export type BatchResult = { id: string; status: string; error?: string };

/** AuditEntry is one administrative change of the organization, as GET /v1/audit lists it. */
export type AuditEntry = {
  organization_id: string;
  seq: number;
  occurred_at: string;
  actor: { subject: string; kind: string; role?: string; client_addr?: string };
  action: string;
  target_type: string;
  target_id: string;
  before: unknown;
  after: unknown;
  prev_hash: string;
  hash: string;
};

export type AuditFilter = {
  actor?: string;
  action?: string;
  target_type?: string;
  target_id?: string;
  since?: string;
  until?: string;
  cursor?: string;
  limit?: number;
};

/** ApiError is an answer outside 2xx, with the API's error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

const tokenKey = "outboxd.token";

/** The user token, kept in session storage (gone when the tab closes). */
export const token = {
  get: (): string | null => sessionStorage.getItem(tokenKey),
  set: (t: string) => sessionStorage.setItem(tokenKey, t),
  clear: () => sessionStorage.removeItem(tokenKey),
};

/**
 * signedIn is the session signed in with the identity provider that this
 * tab read (signin.ts's adopt): its CSRF token, and the person it signs in
 * as X-Outboxd-Subject names them; empty otherwise. The cookie is the
 * browser's, shared by its tabs, so every request names the person this
 * tab shows: once the cookie is another person's, outboxd refuses it (401
 * session_changed) rather than read or act as them under this one's name.
 */
export const signedIn = { csrf: "", subject: "" };

let onUnauthorized: (message: string) => void = () => {};

/** setUnauthorizedHandler is called when the API refuses the token (401). */
export function setUnauthorizedHandler(fn: (message: string) => void) {
  onUnauthorized = fn;
}

let onCSRFRefused: () => Promise<string | null> = async () => null;

/**
 * setCSRFRefusedHandler is called when a change made with the session
 * cookie is refused for its CSRF token (403 csrf_token_invalid), as after
 * signing in again in another tab; what it returns, when not null,
 * replaces the refusal's message. The change is never sent again.
 */
export function setCSRFRefusedHandler(fn: () => Promise<string | null>) {
  onCSRFRefused = fn;
}

let onSessionChanged: () => Promise<string> = async () => "";

/**
 * setSessionChangedHandler is called when outboxd refuses a request for
 * the person this tab shows since the session cookie is now another's
 * (401 session_changed); what it returns replaces the refusal's message.
 * The request is never sent again.
 */
export function setSessionChangedHandler(fn: () => Promise<string>) {
  onSessionChanged = fn;
}

function headers(extra?: Record<string, string>): Record<string, string> {
  const h: Record<string, string> = { Accept: "application/json", ...extra };
  const t = token.get();
  if (t) h.Authorization = "Bearer " + t;
  else if (signedIn.csrf) {
    h["X-CSRF-Token"] = signedIn.csrf;
    h["X-Outboxd-Subject"] = signedIn.subject;
  }
  return h;
}

/** refusal is the ApiError of an answer outside 2xx with its body's error e, after telling the tab what a refused session means. */
async function refusal(res: Response, e: { code?: string; message?: string; details?: unknown }): Promise<ApiError> {
  let message = e.message ?? res.statusText;
  if (res.status === 401 && e.code === "session_changed") return new ApiError(res.status, e.code, await onSessionChanged());
  if (res.status === 403 && e.code === "csrf_token_invalid" && !token.get()) message = (await onCSRFRefused()) ?? message;
  const err = new ApiError(res.status, e.code ?? "http_" + res.status, message, e.details);
  if (res.status === 401) onUnauthorized(err.message);
  return err;
}

/** RequestOptions: an If-Match to send, and a callback that gets a 2xx answer's ETag (null without one). */
export type RequestOptions = { ifMatch?: string | null; etag?: (etag: string | null) => void };

export async function request<T>(method: string, path: string, body?: unknown, opts?: RequestOptions): Promise<T> {
  const extra: Record<string, string> = body === undefined ? {} : { "Content-Type": "application/json" };
  if (opts?.ifMatch) extra["If-Match"] = opts.ifMatch;
  const init: RequestInit = { method, headers: headers(extra) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  // An error answer carries no ETag: the version read stays the one to send.
  if (res.ok) opts?.etag?.(res.headers.get("ETag"));
  const text = await res.text();
  let data: any = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) throw await refusal(res, data?.error ?? {});
  return data as T;
}

const q = (params: Record<string, string | number | undefined>) => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") s.set(k, String(v));
  const out = s.toString();
  return out ? "?" + out : "";
};
const enc = encodeURIComponent;

export type ListFilter = {
  status?: string;
  origin?: "invoke" | "envelope" | "mcp";
  source?: string;
  session_id?: string;
  automation_id?: string;
  created_after?: string;
  created_before?: string;
  limit?: number;
  offset?: number;
};

export const api = {
  listInvocations: (f: ListFilter) => request<{ invocations: Invocation[]; total: number }>("GET", "/v1/invocations" + q(f)),
  getInvocation: (id: string) => request<{ invocation: Invocation }>("GET", "/v1/invocations/" + enc(id)),
  invocationEvents: (id: string) => request<{ events: TimelineEvent[] }>("GET", "/v1/invocations/" + enc(id) + "/events"),
  // digest is the intent the approver reviewed: another by now (someone
  // else's edit, a request asked again) is refused (409), never approved.
  approve: (id: string, mode: "once" | "always", digest?: string) =>
    request<{ invocation: Invocation }>("POST", "/v1/invocations/" + enc(id) + "/approve", { mode, digest }),
  approveEdited: (id: string, params: Record<string, unknown>, digest?: string) =>
    request<{ invocation: Invocation }>("POST", "/v1/invocations/" + enc(id) + "/approve", { mode: "once", params, digest }),
  deny: (id: string, reason: string) => request<{ invocation: Invocation }>("POST", "/v1/invocations/" + enc(id) + "/deny", { reason }),
  catalog: () => request<{ actions: CatalogAction[]; sources: CatalogSource[] }>("GET", "/v1/actions/available"),
  /** settableCatalog is the catalog with the actions of the providers with no credential stored (admins and owners): every action a mode may be set for. */
  settableCatalog: () => request<{ actions: CatalogAction[]; sources: CatalogSource[] }>("GET", "/v1/actions/available?include=unavailable"),

  getEnvelope: (id: string) => request<Envelope>("GET", "/v1/envelopes/" + enc(id)),
  cancelEnvelope: (id: string) => request<Envelope>("DELETE", "/v1/envelopes/" + enc(id)),

  stats: () => request<Stats>("GET", "/v1/stats"),
  rateBuckets: () => request<{ buckets: RateBucket[] }>("GET", "/v1/rate-buckets"),
  deadLetters: (limit: number, offset: number) => request<{ dead_letters: Invocation[]; total: number }>("GET", "/v1/dead-letters" + q({ limit, offset })),
  retryDeadLetters: (ids: string[]) => request<{ results: BatchResult[] }>("POST", "/v1/dead-letters/retry", { ids }),
  discardDeadLetters: (ids: string[]) => request<{ results: BatchResult[] }>("POST", "/v1/dead-letters/discard", { ids }),
  queue: () => request<OrgQueue>("GET", "/v1/queues"),
  pause: () => request<OrgQueue>("POST", "/v1/queues/pause"),
  resume: () => request<OrgQueue>("POST", "/v1/queues/resume"),
  // Replaced whole: each PUT sends If-Match the ETag its page read, so a
  // change made meanwhile is a 412 (ui.tsx's isStale) rather than lost.
  getQuietHours: (etag: (e: string | null) => void) => request<{ windows: QuietWindow[] }>("GET", "/v1/quiet-hours", undefined, { etag }),
  putQuietHours: (windows: QuietWindow[], ifMatch: string | null, etag: (e: string | null) => void) =>
    request<{ windows: QuietWindow[] }>("PUT", "/v1/quiet-hours", { windows }, { ifMatch, etag }),
  getDoNotContact: (etag: (e: string | null) => void) => request<{ patterns: string[] }>("GET", "/v1/do-not-contact", undefined, { etag }),
  putDoNotContact: (patterns: string[], ifMatch: string | null, etag: (e: string | null) => void) =>
    request<{ patterns: string[] }>("PUT", "/v1/do-not-contact", { patterns }, { ifMatch, etag }),

  connectors: () => request<{ connectors: Connector[] }>("GET", "/v1/connectors"),
  connector: (id: string) => request<{ connector: Connector }>("GET", "/v1/connectors/" + enc(id)),
  validateConnector: (id: string) => request<ConnectorDiagnosis>("POST", "/v1/connectors/" + enc(id) + "/validate"),
  connectorTools: (id: string) => request<{ tools: ToolReview[] }>("GET", "/v1/connectors/" + enc(id) + "/tools"),
  reviewTools: (id: string, reviews: Record<string, { mode: string; hash: string }>) => request<{ tools: ToolReview[] }>("PUT", "/v1/connectors/" + enc(id) + "/tools", reviews),

  audit: (f: AuditFilter) => request<{ entries: AuditEntry[]; next_cursor: string | null }>("GET", "/v1/audit" + q(f)),
  auditExport: async (): Promise<Blob> => {
    const res = await fetch("/v1/audit/export", { headers: headers({ Accept: "application/x-ndjson" }) });
    if (!res.ok) throw await refusal(res, (await res.json().catch(() => null))?.error ?? {});
    return res.blob();
  },
};

/** StreamMessage is one Server-Sent Event of GET /v1/events. */
export type StreamMessage = {
  id: string;
  event: string;
  data: {
    event_id: number;
    event_type: string;
    invocation_id: string;
    status: string;
    decided_by?: string;
    reason?: string;
    success?: boolean;
    invocation: Invocation;
  };
};

/**
 * streamEvents reads GET /v1/events with fetch, so the token travels in
 * the Authorization header (EventSource cannot send one, and a token in
 * the URL would end up in logs). It reconnects with Last-Event-ID after a
 * drop, and returns a function that stops it.
 */
export function streamEvents(onMessage: (m: StreamMessage) => void, onState: (live: boolean) => void): () => void {
  const ctrl = new AbortController();
  let lastId = "";
  const run = async () => {
    let delay = 500;
    while (!ctrl.signal.aborted) {
      try {
        const res = await fetch("/v1/events", {
          headers: headers(lastId ? { "Last-Event-ID": lastId, Accept: "text/event-stream" } : { Accept: "text/event-stream" }),
          signal: ctrl.signal,
          cache: "no-store",
        });
        if (res.status === 401) {
          await refusal(res, (await res.json().catch(() => null))?.error ?? { message: "the token was refused" });
          return;
        }
        if (!res.ok || !res.body) throw new Error("stream answered " + res.status);
        onState(true);
        delay = 500;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value.replace(/\r\n?/g, "\n");
          let end: number;
          while ((end = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const m = parseBlock(block);
            if (m) {
              lastId = m.id || lastId;
              onMessage(m);
            }
          }
        }
      } catch (e) {
        if (ctrl.signal.aborted) return;
      }
      onState(false);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  };
  void run();
  return () => ctrl.abort();
}

function parseBlock(block: string): StreamMessage | null {
  let id = "";
  let event = "message";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (field === "id") id = value;
    else if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) return null;
  try {
    return { id, event, data: JSON.parse(data.join("\n")) };
  } catch {
    return null;
  }
}

/** Claims are what the console reads from the token to shape its pages; the server checks the token on every call. */
export type Claims = { org: string; sub: string; kind: string; role?: string; exp?: number };

export function readClaims(jwt: string): Claims | null {
  const part = jwt.split(".")[1];
  if (!part) return null;
  try {
    const json = atob(part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "="));
    const c = JSON.parse(json);
    return typeof c === "object" && c ? (c as Claims) : null;
  } catch {
    return null;
  }
}
