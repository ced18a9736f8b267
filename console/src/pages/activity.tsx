// Activity: every invocation with filters and paging, and one
// invocation's page with its timeline, result, attempts and errors.
import { useEffect, useState } from "preact/hooks";
import { api, type Invocation, type ListFilter, type TimelineEvent } from "../api";
import type { Session } from "../main";
import { Preview } from "../preview";
import {
  Alert,
  Asker,
  AskerFacts,
  DataTable,
  ErrorAlert,
  Flash,
  InputField,
  Json,
  Loading,
  PageHead,
  Pager,
  ParamsForm,
  Risk,
  SelectField,
  Status,
  Title,
  count,
  errorText,
  fmtTime,
  useStream,
} from "../ui";
import { ApprovalProgress, mayDecide } from "./approvals";
import { Decision, useCatalog } from "./inbox";
import { Edits, IntentFacts } from "./intent";

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

  const set = (k: keyof typeof form) => (value: string) => setForm({ ...form, [k]: value });
  return (
    <section aria-labelledby="activity-h">
      <Title id="activity-h">Activity</Title>
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
        <SelectField id="f-status" label="Status" value={form.status} options={statuses} optionLabel={(s) => s || "any"} onValue={set("status")} />
        <InputField id="f-source" label="Source" value={form.source} onValue={set("source")} placeholder="slack" />
        <InputField id="f-session" label="Session" value={form.session_id} onValue={set("session_id")} />
        <InputField id="f-automation" label="Automation" value={form.automation_id} onValue={set("automation_id")} />
        <InputField id="f-from" label="Created from" type="datetime-local" value={form.from} onValue={set("from")} />
        <InputField id="f-to" label="Created before" type="datetime-local" value={form.to} onValue={set("to")} />
        <div class="buttons">
          <button type="submit" class="primary">
            Apply filters
          </button>
        </div>
      </form>
      <ErrorAlert error={error} />
      {data ? (
        <>
          <DataTable caption={count(data.total, "invocation")} columns={["Action", "Status", "Risk", "Asked by", "Created"]}>
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
          </DataTable>
          <Pager offset={offset} total={data.total} pageSize={pageSize} onOffset={setOffset} />
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

  if (error) return <ErrorAlert error={error} />;
  if (!inv) return <Loading />;
  const schema = catalog.get(inv.integration + "." + inv.action);
  return (
    <section aria-labelledby="inv-h">
      <PageHead id="inv-h" back={{ href: "#/activity", label: "Activity" }} title={`${inv.integration}.${inv.action}`}>
        <Status status={inv.status} />
        <Risk risk={inv.risk_level} />
      </PageHead>
      <Flash message={flash} />
      <div class="two-col">
        <div>
          <h2>Details</h2>
          <dl class="facts">
            <dt>Invocation</dt>
            <dd>
              <code>{inv.id}</code>
            </dd>
            <AskerFacts inv={inv} />
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
          {inv.status === "pending" ? <ApprovalProgress inv={inv} canDecide={session.canDecide} /> : null}
          {inv.status === "pending" && mayDecide(inv, session.canDecide) ? (
            <Decision
              inv={inv}
              onDecided={(msg) => {
                setFlash(msg);
                load();
              }}
            />
          ) : null}
          <Preview inv={inv} />
          <IntentFacts inv={inv} />
          <h2>Params</h2>
          <ParamsForm params={inv.params} schema={schema?.params} />
          <Edits inv={inv} />
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
