// Activity: every invocation with filters and paging, and one
// invocation's page with its timeline, result, attempts and errors.
import { useEffect, useState } from "preact/hooks";
import { api, type Invocation, type ListFilter, type TimelineEvent } from "../api";
import type { Session } from "../main";
import { Alert, Json, ParamsForm, Risk, Status, errorText, fmtTime, useStream } from "../ui";
import { Asker, Decision, useCatalog } from "./inbox";

const statuses = ["", "pending", "approved", "executing", "completed", "failed", "denied", "expired", "skipped", "cancelled"];
const pageSize = 25;

/** toISO turns a datetime-local value into RFC 3339, "" when empty. */
function toISO(local: string): string {
  if (!local) return "";
  const d = new Date(local);
  return isNaN(d.getTime()) ? "" : d.toISOString();
}

export function Activity(_: { session: Session }) {
  const [form, setForm] = useState({ status: "", source: "", session_id: "", automation_id: "", from: "", to: "" });
  const [filter, setFilter] = useState<ListFilter>({});
  const [offset, setOffset] = useState(0);
  const [data, setData] = useState<{ invocations: Invocation[]; total: number } | null>(null);
  const [error, setError] = useState("");

  useEffect(() => {
    setError("");
    api
      .listInvocations({ ...filter, limit: pageSize, offset })
      .then(setData)
      .catch((e) => setError(errorText(e)));
  }, [filter, offset]);

  const set = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <section aria-labelledby="activity-h">
      <h1 id="activity-h" tabIndex={-1}>
        Activity
      </h1>
      <form
        class="filters"
        aria-label="Filters"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setFilter({
            status: form.status,
            source: form.source.trim(),
            session_id: form.session_id.trim(),
            automation_id: form.automation_id.trim(),
            created_after: toISO(form.from),
            created_before: toISO(form.to),
          });
        }}
      >
        <div class="field">
          <label for="f-status">Status</label>
          <select id="f-status" value={form.status} onChange={set("status")}>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s || "any"}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="f-source">Source</label>
          <input id="f-source" value={form.source} onInput={set("source")} placeholder="slack" />
        </div>
        <div class="field">
          <label for="f-session">Session</label>
          <input id="f-session" value={form.session_id} onInput={set("session_id")} />
        </div>
        <div class="field">
          <label for="f-automation">Automation</label>
          <input id="f-automation" value={form.automation_id} onInput={set("automation_id")} />
        </div>
        <div class="field">
          <label for="f-from">Created from</label>
          <input id="f-from" type="datetime-local" value={form.from} onInput={set("from")} />
        </div>
        <div class="field">
          <label for="f-to">Created before</label>
          <input id="f-to" type="datetime-local" value={form.to} onInput={set("to")} />
        </div>
        <div class="buttons">
          <button type="submit" class="primary">
            Apply filters
          </button>
        </div>
      </form>
      {error ? <Alert kind="error">{error}</Alert> : null}
      {data ? (
        <>
          <div class="table-wrap">
            <table>
              <caption>
                {data.total} invocation{data.total === 1 ? "" : "s"}
              </caption>
              <thead>
                <tr>
                  <th scope="col">Action</th>
                  <th scope="col">Status</th>
                  <th scope="col">Risk</th>
                  <th scope="col">Asked by</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {data.invocations.map((inv) => (
                  <tr key={inv.id}>
                    <td>
                      <a href={"#/invocations/" + inv.id}>
                        {inv.integration}.{inv.action}
                      </a>
                    </td>
                    <td>
                      <Status status={inv.status} />
                    </td>
                    <td>
                      <Risk risk={inv.risk_level} />
                    </td>
                    <td>
                      <Asker inv={inv} />
                    </td>
                    <td>{fmtTime(inv.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav class="pager" aria-label="Pages">
            <button disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - pageSize))}>
              Newer
            </button>
            <span>
              {data.total === 0 ? 0 : offset + 1}–{Math.min(offset + pageSize, data.total)} of {data.total}
            </span>
            <button disabled={offset + pageSize >= data.total} onClick={() => setOffset(offset + pageSize)}>
              Older
            </button>
          </nav>
        </>
      ) : null}
    </section>
  );
}

export function InvocationPage({ id, session }: { id: string; session: Session }) {
  const [inv, setInv] = useState<Invocation | null>(null);
  const [events, setEvents] = useState<TimelineEvent[]>([]);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const catalog = useCatalog();
  const load = () =>
    Promise.all([api.getInvocation(id), api.invocationEvents(id)])
      .then(([i, e]) => {
        setInv(i.invocation);
        setEvents(e.events);
      })
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    setInv(null);
    load();
  }, [id]);
  useStream(
    (m) => {
      if (m.data.invocation_id === id) load();
    },
    [id],
  );
  // The stream announces requests, decisions and ends; the steps between
  // (started, retries) are read again while the invocation runs.
  useEffect(() => {
    if (!inv || !["approved", "executing"].includes(inv.status)) return;
    const t = setTimeout(load, 1000);
    return () => clearTimeout(t);
  }, [inv]);

  if (error) return <Alert kind="error">{error}</Alert>;
  if (!inv) return <p>Loading…</p>;
  const schema = catalog.get(inv.integration + "." + inv.action);
  return (
    <section aria-labelledby="inv-h">
      <p>
        <a href="#/activity">← Activity</a>
      </p>
      <div class="page-head">
        <h1 id="inv-h" tabIndex={-1}>
          {inv.integration}.{inv.action}
        </h1>
        <Status status={inv.status} />
        <Risk risk={inv.risk_level} />
      </div>
      <div aria-live="polite">{flash ? <Alert kind="ok">{flash}</Alert> : null}</div>
      <div class="two-col">
        <div>
          <h2>Details</h2>
          <dl class="facts">
            <dt>Invocation</dt>
            <dd>
              <code>{inv.id}</code>
            </dd>
            <dt>Asked by</dt>
            <dd>
              <Asker inv={inv} /> <span class="muted">({inv.requested_by})</span>
            </dd>
            <dt>Mode</dt>
            <dd>
              {inv.mode} <span class="muted">from {inv.mode_source}</span>
            </dd>
            {inv.approved_by ? (
              <>
                <dt>Approved by</dt>
                <dd>{inv.approved_by}</dd>
              </>
            ) : null}
            <dt>Attempts</dt>
            <dd>
              {inv.attempt}
              {inv.provider_waits ? ` (${inv.provider_waits} provider waits)` : ""}
              {inv.replay_count ? `, replayed ${inv.replay_count}×` : ""}
            </dd>
            <dt>Created</dt>
            <dd>{fmtTime(inv.created_at)}</dd>
            <dt>Completed</dt>
            <dd>{fmtTime(inv.completed_at)}</dd>
            {inv.duration_ms !== null ? (
              <>
                <dt>Duration</dt>
                <dd>{inv.duration_ms} ms</dd>
              </>
            ) : null}
            {inv.origin === "envelope" ? (
              <>
                <dt>Envelope</dt>
                <dd>
                  <a href={"#/envelopes/" + inv.id}>{inv.external_id ?? inv.id}</a>
                </dd>
              </>
            ) : null}
          </dl>
          {inv.error ? <Alert kind="error">Error: {inv.error}</Alert> : null}
          {inv.denied_reason ? <Alert kind="info">Denied: {inv.denied_reason}</Alert> : null}
          {inv.status === "pending" && session.canDecide ? (
            <Decision
              inv={inv}
              onDecided={(msg) => {
                setFlash(msg);
                load();
              }}
            />
          ) : null}
          <h2>Params</h2>
          <ParamsForm params={inv.params} schema={schema?.params} />
          <h2>Result</h2>
          <Json value={inv.result} />
        </div>
        <div>
          <h2>Timeline</h2>
          <ol class="timeline" aria-label="Timeline">
            {events.map((e) => (
              <li key={e.id} class={"ev ev-" + e.type}>
                <span class="ev-type">{e.type}</span>
                <span class="ev-move">
                  {e.from_status ? e.from_status + " → " : ""}
                  {e.to_status}
                </span>
                <time dateTime={e.created_at}>{fmtTime(e.created_at)}</time>
                {e.actor ? <span class="muted"> by {e.actor}</span> : null}
                {e.reason ? <div class="ev-reason">{e.reason}</div> : null}
              </li>
            ))}
          </ol>
        </div>
      </div>
    </section>
  );
}
