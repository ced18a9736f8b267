// Small shared pieces: formatting, the params form, status badges and
// the event bus the live stream feeds.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, type JSONSchema, type StreamMessage } from "./api";

export const REDACTED = "[REDACTED]";

export function fmtTime(s: string | null | undefined): string {
  if (!s) return "—";
  const d = new Date(s);
  return isNaN(d.getTime()) ? s : d.toLocaleString();
}

export function fmtDuration(seconds: number): string {
  const neg = seconds < 0;
  let s = Math.abs(Math.round(seconds));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const out = h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s}s` : `${s}s`;
  return neg ? "in " + out : out;
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return `${e.message} (${e.status} ${e.code})`;
  return e instanceof Error ? e.message : String(e);
}

/** useNow ticks every second, for countdowns. */
export function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return now;
}

type Listener = (m: StreamMessage) => void;
const listeners = new Set<Listener>();

/** bus carries the live stream's messages to the pages that listen. */
export const bus = {
  emit: (m: StreamMessage) => listeners.forEach((l) => l(m)),
  on: (l: Listener) => {
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  },
};

/** useStream calls fn for every live message while the component is mounted. */
export function useStream(fn: Listener, deps: unknown[]) {
  useEffect(() => bus.on(fn), deps);
}

export function Status({ status }: { status: string }) {
  return <span class={"badge status-" + status}>{status}</span>;
}

export function Risk({ risk }: { risk: string }) {
  return <span class={"badge risk-" + risk}>{risk}</span>;
}

export function Alert({ kind, children }: { kind: "error" | "info" | "ok"; children: ComponentChildren }) {
  return (
    <div class={"alert alert-" + kind} role={kind === "error" ? "alert" : "status"}>
      {children}
    </div>
  );
}

let fieldSeq = 0;

/**
 * ParamsForm renders params as a read-only form laid out by the action's
 * JSON Schema: each property a labelled field with its description, in
 * schema order, then any the schema does not name. Redacted values are
 * shown as redacted, never as their text.
 */
export function ParamsForm({ params, schema }: { params: unknown; schema?: JSONSchema }) {
  const [prefix] = useState(() => "p" + ++fieldSeq);
  if (params === null || params === undefined) return <p class="muted">No params.</p>;
  return (
    <div class="params-form">
      <Fields value={params} schema={schema} path={prefix} />
    </div>
  );
}

function Fields({ value, schema, path }: { value: unknown; schema?: JSONSchema; path: string }) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return <Field name="value" value={value} schema={schema} path={path} />;
  }
  const obj = value as Record<string, unknown>;
  const props = schema?.properties ?? {};
  const names = [...Object.keys(props).filter((k) => k in obj), ...Object.keys(obj).filter((k) => !(k in props))];
  return (
    <>
      {names.map((k) => (
        <Field key={k} name={k} value={obj[k]} schema={props[k]} required={schema?.required?.includes(k)} path={path + "-" + k} />
      ))}
    </>
  );
}

function Field({ name, value, schema, required, path }: { name: string; value: unknown; schema?: JSONSchema; required?: boolean; path: string }) {
  const label = schema?.title ?? name;
  const help = schema?.description;
  const redacted = typeof value === "string" && value.includes(REDACTED);
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    return (
      <fieldset class="field-group">
        <legend>{label}</legend>
        <Fields value={value} schema={schema} path={path} />
      </fieldset>
    );
  }
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  const long = text.length > 60 || text.includes("\n");
  return (
    <div class={"field" + (redacted ? " redacted" : "")}>
      <label for={path}>
        {label}
        {required ? <span class="req" aria-hidden="true"> *</span> : null}
        {redacted ? <span class="badge redacted-badge">redacted</span> : null}
      </label>
      {value === REDACTED ? (
        <input id={path} readOnly value="•••••• (redacted)" aria-describedby={help ? path + "-help" : undefined} />
      ) : long ? (
        <textarea id={path} readOnly rows={Math.min(8, text.split("\n").length + 1)} value={text} aria-describedby={help ? path + "-help" : undefined} />
      ) : (
        <input id={path} readOnly value={text} aria-describedby={help ? path + "-help" : undefined} />
      )}
      {help ? (
        <small id={path + "-help"} class="help">
          {help}
        </small>
      ) : null}
    </div>
  );
}

/** Json shows a value as indented JSON, cut at max characters. */
export function Json({ value, max = 4000 }: { value: unknown; max?: number }) {
  if (value === null || value === undefined) return <p class="muted">None.</p>;
  let text = JSON.stringify(value, null, 2);
  const cut = text.length > max;
  if (cut) text = text.slice(0, max);
  return (
    <>
      <pre class="json" tabIndex={0}>
        {text}
      </pre>
      {cut ? <p class="muted">Truncated to {max} characters.</p> : null}
    </>
  );
}
