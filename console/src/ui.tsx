// Small shared pieces: formatting, the params form, status badges, the
// pages' building blocks (headings, fields, tables, pager) and the event
// bus the live stream feeds.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, type Invocation, type JSONSchema, type StreamMessage } from "./api";

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

/** isStale: a 412, a replacement sent If-Match a version someone changed since. */
export function isStale(e: unknown): boolean {
  return e instanceof ApiError && e.status === 412;
}

/** staleText says so, after the page read the setting again. */
export function staleText(what: string): string {
  return `Someone changed ${what} meanwhile: the page was reloaded with theirs. Make your changes again.`;
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

/** ErrorAlert shows error in an alert, nothing when it is empty. */
export function ErrorAlert({ error }: { error: string }) {
  return error ? <Alert kind="error">{error}</Alert> : null;
}

/** Flash announces a success message in a polite live region. */
export function Flash({ message, class: cls }: { message: string; class?: string }) {
  return (
    <div aria-live="polite" class={cls}>
      {message ? <Alert kind="ok">{message}</Alert> : null}
    </div>
  );
}

export function Loading() {
  return <p>Loading…</p>;
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** Title is a page's h1, which takes the focus on navigation. */
export function Title({ id, children }: { id: string; children: ComponentChildren }) {
  return (
    <h1 id={id} tabIndex={-1}>
      {children}
    </h1>
  );
}

/**
 * PageHead is a page's title in a row with what follows it (badges,
 * buttons), under a link back to the list the page belongs to.
 */
export function PageHead({ id, title, back, children }: { id: string; title: ComponentChildren; back?: { href: string; label: string }; children?: ComponentChildren }) {
  return (
    <>
      {back ? (
        <p>
          <a href={back.href}>{"← " + back.label}</a>
        </p>
      ) : null}
      <div class="page-head">
        <Title id={id}>{title}</Title>
        {children}
      </div>
    </>
  );
}

/** Card is a titled section of a page. */
export function Card({ id, title, children }: { id: string; title: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** FormField is a labelled form control. */
export function FormField({ id, label, children }: { id: string; label: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
    </div>
  );
}

type InputProps = { id: string; value: string; onValue: (value: string) => void; type?: string; placeholder?: string; required?: boolean };

export function InputField({ label, onValue, ...input }: InputProps & { label: string }) {
  return (
    <FormField id={input.id} label={label}>
      <input {...input} onInput={(e) => onValue(e.currentTarget.value)} />
    </FormField>
  );
}

type SelectProps = { id: string; value: string; options: string[]; optionLabel?: (option: string) => string; onValue: (value: string) => void };

/** Select offers options, each shown as optionLabel words it (as itself by default). */
export function Select({ id, value, options, optionLabel = (o) => o, onValue }: SelectProps) {
  return (
    <select id={id} value={value} onChange={(e) => onValue(e.currentTarget.value)}>
      {options.map((o) => (
        <option key={o} value={o}>
          {optionLabel(o)}
        </option>
      ))}
    </select>
  );
}

export function SelectField({ label, ...select }: SelectProps & { label: string }) {
  return (
    <FormField id={select.id} label={label}>
      <Select {...select} />
    </FormField>
  );
}

/**
 * DataTable is a scrollable table with a column header per entry of
 * columns, then, with actions, one for the rows' buttons; children are
 * the body's rows.
 */
export function DataTable({ caption, columns, actions, children }: { caption?: string; columns: ComponentChildren[]; actions?: boolean; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table>
        {caption !== undefined ? <caption>{caption}</caption> : null}
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th scope="col" key={i}>
                {c}
              </th>
            ))}
            {actions ? (
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** count words a number of things: "1 invocation", "2 invocations". */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** Pager moves a list by pageSize, newest first. */
export function Pager({ offset, total, pageSize, onOffset }: { offset: number; total: number; pageSize: number; onOffset: (offset: number) => void }) {
  return (
    <nav class="pager" aria-label="Pages">
      <button disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - pageSize))}>
        Newer
      </button>
      <span>
        {total === 0 ? 0 : offset + 1}–{Math.min(offset + pageSize, total)} of {total}
      </span>
      <button disabled={offset + pageSize >= total} onClick={() => onOffset(offset + pageSize)}>
        Older
      </button>
    </nav>
  );
}

/** ModeFrom is a mode and where it came from. */
export function ModeFrom({ mode, source }: { mode: string; source: string }) {
  return (
    <>
      {mode} <span class="muted">from {source}</span>
    </>
  );
}

/** Asker names who asked for an invocation: its automation, session or requester. */
export function Asker({ inv }: { inv: Invocation }) {
  if (inv.automation_id) return <span>automation <strong>{inv.automation_id}</strong></span>;
  if (inv.session_id) return <span>session <strong>{inv.session_id}</strong></span>;
  return <span>{inv.requested_by}</span>;
}

/** AskerFacts are an invocation's "Asked by" and "Mode" entries in a facts list. */
export function AskerFacts({ inv }: { inv: Invocation }) {
  return (
    <>
      <dt>Asked by</dt>
      <dd>
        <Asker inv={inv} /> <span class="muted">({inv.requested_by})</span>
      </dd>
      <dt>Mode</dt>
      <dd>
        <ModeFrom mode={inv.mode} source={inv.mode_source} />
      </dd>
      {inv.grant_id ? (
        <>
          <dt>Grant</dt>
          <dd>
            <a href="#/grants" data-grant-id={inv.grant_id}>
              {inv.grant_id}
            </a>
          </dd>
        </>
      ) : null}
    </>
  );
}

// HIDDEN matches a character that shows as nothing or reorders the text
// around it (Unicode's format characters: bidi overrides and isolates,
// zero-width spaces and joiners, the BOM, tags), but for the joiner inside
// an emoji sequence. An agent's value could otherwise read as another.
const HIDDEN = /(?!(?<=\p{Extended_Pictographic}[\u{FE0F}\u{1F3FB}-\u{1F3FF}]*)\u200D(?=\p{Extended_Pictographic}))\p{Cf}/u;

/** hasHidden reports whether text holds a character HIDDEN matches. */
export function hasHidden(text: string): boolean {
  return HIDDEN.test(text);
}

/** escapeHidden writes each such character of JSON text as its \u escape: the same JSON, read as it is. */
export function escapeHidden(json: string): string {
  // By UTF-16 unit: a tag character is two escapes, as JSON writes it.
  return json.replace(new RegExp(HIDDEN.source, "gu"), (c) =>
    c
      .split("")
      .map((u) => "\\u" + u.charCodeAt(0).toString(16).padStart(4, "0"))
      .join(""),
  );
}

/** Shown is text with each such character shown as a mark naming it (⟨U+202E⟩) instead of acting. */
export function Shown({ text }: { text: string }) {
  if (!hasHidden(text)) return <>{text}</>;
  const parts = text.split(new RegExp("(" + HIDDEN.source + ")", "u"));
  return (
    <>
      {parts.map((p, i) =>
        i % 2 ? (
          <span key={i} class="hidden-char" title="An invisible character, shown by its code">
            {"⟨U+" + p.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0") + "⟩"}
          </span>
        ) : (
          p
        ),
      )}
    </>
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
  // Own keys only: `in` is true of every object's members too, so a param
  // named constructor or toString would be left out.
  const names = [...Object.keys(props).filter((k) => Object.hasOwn(obj, k)), ...Object.keys(obj).filter((k) => !Object.hasOwn(props, k))];
  return (
    <>
      {names.map((k) => (
        <Field key={k} name={k} value={obj[k]} schema={Object.hasOwn(props, k) ? props[k] : undefined} required={schema?.required?.includes(k)} path={path + "-" + k} />
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
        <legend>
          <Shown text={label} />
        </legend>
        <Fields value={value} schema={schema} path={path} />
      </fieldset>
    );
  }
  const text = (typeof value === "string" ? value : JSON.stringify(value, null, 2)) ?? "";
  const hidden = hasHidden(label) || hasHidden(text);
  // An output, not a read-only input: it wraps, so a long value is read
  // whole at any width instead of clipped.
  return (
    <div class={"field" + (redacted ? " redacted" : "")}>
      <label for={path}>
        <Shown text={label} />
        {required ? <span class="req" aria-hidden="true"> *</span> : null}
        {redacted ? <span class="badge redacted-badge">redacted</span> : null}
        {hidden ? <span class="badge hidden-badge">invisible characters</span> : null}
      </label>
      <output id={path} class="value" aria-live="off" aria-describedby={help ? path + "-help" : undefined}>
        {value === REDACTED ? "•••••• (redacted)" : <Shown text={text} />}
      </output>
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
