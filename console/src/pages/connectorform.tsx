// The connector form: add or edit an MCP connector, with its secret
// write-only (entered, never shown back), checked as the API checks it,
// and its risk policy: a default tier and tiers per tool, "tool = tier"
// one a line (the API's risk_policy {default, tools}, replaced whole).
import { useState } from "preact/hooks";
import type { Connector } from "../api";
import { admin, type ConnectorFull, type ConnectorInput, type RiskPolicy } from "../admin";
import { ErrorAlert } from "../ui";
import { ChoiceField, FieldError, SecretField, TextField, useForm, type FieldErrors } from "../forms";

const authTypes = ["none", "bearer", "custom_header"];

/** The tiers and risk words the API takes (policy.ParseTier), case-insensitive. */
const tierWords = ["R0", "R1", "R2", "R3", "R4", "read", "write", "danger", "low", "medium", "high"];
const isTier = (t: string) => tierWords.some((w) => w.toLowerCase() === t.toLowerCase());

/** toolLines shows a policy's per-tool tiers as "tool = tier" lines. */
function toolLines(p?: RiskPolicy): string {
  return Object.entries(p?.tools ?? {})
    .map(([tool, tier]) => `${tool} = ${tier}`)
    .join("\n");
}

/** parseTools reads "tool = tier" lines; errors name the first bad line. */
function parseTools(text: string): { tools: Record<string, string>; error?: string } {
  const tools: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    const m = /^(.+?)\s*[=:]\s*(\S+)$/.exec(line);
    if (!m) return { tools, error: `line ${i + 1}: write "tool = tier"` };
    const [, tool, tier] = m;
    if (!isTier(tier)) return { tools, error: `risk_policy for tool "${tool.trim()}": "${tier}" is not one of R0, R1, R2, R3, R4, read, write, danger` };
    if (tool.trim() in tools) return { tools, error: `line ${i + 1}: ${tool.trim()} is listed twice` };
    tools[tool.trim()] = tier;
  }
  return { tools };
}

function checkConnector(name: string, url: string, authType: string, header: string, secret: string, secretStored: boolean): FieldErrors {
  const errs: FieldErrors = {};
  const n = name.trim();
  if (!n || n.length > 100) errs.name = "name is required (at most 100 characters)";
  if (!url.trim()) errs.url = "url is required";
  else if (url.length > 2048) errs.url = "url is longer than 2048 bytes";
  else {
    try {
      const u = new URL(url);
      if (u.protocol !== "http:" && u.protocol !== "https:") errs.url = "url must be an http or https URL";
    } catch {
      errs.url = "url is not a valid URL";
    }
  }
  if (authType === "custom_header" && !header.trim()) errs["auth.header_name"] = "auth header_name is required for custom_header auth";
  if (authType !== "none" && !secret && !secretStored) errs["auth.secret"] = `auth.secret is required for ${authType} auth`;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(secret)) errs["auth.secret"] = "auth.secret cannot be sent as an HTTP header value: it holds a control character";
  return errs;
}

/** ConnectorForm creates a connector (no conn) or edits conn; done gets the saved one. */
export function ConnectorForm({ conn, done }: { conn?: Connector; done: (c: ConnectorFull) => void }) {
  const full = conn as ConnectorFull | undefined;
  const p = conn ? "con-edit" : "con-new";
  const [name, setName] = useState(conn?.name ?? "");
  const [url, setURL] = useState(conn?.url ?? "");
  const [authType, setAuthType] = useState(conn?.auth.type ?? "none");
  const [header, setHeader] = useState(full?.auth.header_name ?? "");
  const [secret, setSecret] = useState("");
  const [enabled, setEnabled] = useState(conn?.enabled ?? true);
  const [riskDefault, setRiskDefault] = useState(full?.risk_policy?.default ?? "");
  const [riskTools, setRiskTools] = useState(toolLines(full?.risk_policy));
  const form = useForm();
  // A secret is stored when the connector has one and its auth type keeps it.
  const secretStored = !!conn && conn.auth.type !== "none";
  const submit = async (e: Event) => {
    e.preventDefault();
    const errs = checkConnector(name, url, authType, header, secret, secretStored);
    const parsed = parseTools(riskTools);
    if (parsed.error) errs.risk_policy = parsed.error;
    if (form.clientErrors(errs)) return;
    const auth: ConnectorInput["auth"] = { type: authType };
    if (authType === "custom_header") auth.header_name = header.trim();
    if (authType !== "none" && secret) auth.secret = secret;
    const risk_policy: RiskPolicy = {};
    if (riskDefault) risk_policy.default = riskDefault;
    if (Object.keys(parsed.tools).length) risk_policy.tools = parsed.tools;
    const body: ConnectorInput = { name: name.trim(), url: url.trim(), enabled, auth, risk_policy };
    if (!conn) body.transport = "remote_http";
    await form.submit(async () => {
      const r = conn ? await admin.updateConnector(conn.id, body) : await admin.createConnector(body);
      setSecret("");
      if (!conn) {
        setName("");
        setURL("");
      }
      done(r.connector);
    });
  };
  return (
    <form class="admin-form" onSubmit={submit} noValidate>
      <ErrorAlert error={form.error} />
      <div class="row">
        <TextField id={p + "-name"} label="Name" value={name} onValue={setName} error={form.fields.name} required />
        <ChoiceField id={p + "-auth"} label="Authentication" value={authType} options={authTypes} onValue={setAuthType} error={form.fields.auth} />
      </div>
      <TextField id={p + "-url"} label="URL" value={url} onValue={setURL} error={form.fields.url ?? form.fields.transport} required placeholder="https://mcp.example.com/mcp" help="Streamable HTTP (remote_http)." />
      {authType === "custom_header" ? (
        <TextField id={p + "-header"} label="Header name" value={header} onValue={setHeader} error={form.fields["auth.header_name"]} required placeholder="X-Api-Key" />
      ) : null}
      {authType !== "none" ? (
        <SecretField
          id={p + "-secret"}
          label={authType === "bearer" ? "Bearer token" : "Header value"}
          value={secret}
          onValue={setSecret}
          error={form.fields["auth.secret"]}
          stored={secretStored && conn?.auth.type !== "none"}
          help={secretStored ? "Leave empty to keep the stored one." : undefined}
        />
      ) : null}
      <fieldset class="risk-policy">
        <legend>Risk policy</legend>
        <ChoiceField
          id={p + "-risk-default"}
          label="Default tier (tools with no tier below and no telling annotation)"
          value={riskDefault}
          options={["", "R0", "R1", "R2", "R3", "R4", ...(riskDefault && !["R0", "R1", "R2", "R3", "R4"].includes(riskDefault) ? [riskDefault] : [])]}
          optionLabel={(o) => o || "none (write, R2)"}
          onValue={setRiskDefault}
        />
        <div class={"field" + (form.fields.risk_policy ? " invalid" : "")}>
          <label for={p + "-risk-tools"}>Tiers per tool, one a line: tool = tier</label>
          <textarea
            id={p + "-risk-tools"}
            rows={3}
            spellcheck={false}
            value={riskTools}
            placeholder="delete_repo = R4"
            aria-invalid={form.fields.risk_policy ? true : undefined}
            aria-describedby={p + "-risk-tools-help" + (form.fields.risk_policy ? " " + p + "-risk-tools-err" : "")}
            onInput={(e) => setRiskTools(e.currentTarget.value)}
          />
          <small id={p + "-risk-tools-help"} class="help">
            R0 to R4, or read (R1), write (R2), danger (R3). They win over the server's annotations; R1 tools infer allow, R3 and R4 never run without a
            human.
          </small>
          <FieldError id={p + "-risk-tools"} message={form.fields.risk_policy} />
        </div>
      </fieldset>
      <div class="field">
        <label>
          <input type="checkbox" id={p + "-enabled"} checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
        </label>
      </div>
      <div class="buttons">
        <button class="primary" type="submit" disabled={form.busy}>
          {conn ? "Save connector" : "Add connector"}
        </button>
      </div>
    </form>
  );
}
