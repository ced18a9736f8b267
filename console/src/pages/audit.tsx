// Audit: the organization's audit trail, newest first, with filters and
// paging by cursor, and a download of the whole trail as JSON lines to
// check offline with `outboxd audit verify`. Admins and owners.
import { useEffect, useState } from "preact/hooks";
import { api, type AuditEntry, type AuditFilter } from "../api";
import type { Session } from "../main";
import { DataTable, Empty, ErrorAlert, InputField, Json, PageHead, errorText, fmtTime } from "../ui";

const pageSize = 50;

/** toISO turns a datetime-local value into RFC 3339, "" when empty. */
function toISO(local: string): string {
  if (!local) return "";
  const d = new Date(local);
  return isNaN(d.getTime()) ? "" : d.toISOString();
}

export function Audit(_: { session: Session }) {
  const [form, setForm] = useState({ actor: "", action: "", target_type: "", target_id: "", since: "", until: "" });
  const [filter, setFilter] = useState<AuditFilter>({});
  // cursors are the cursors of the pages before this one; the last is this page's.
  const [cursors, setCursors] = useState<string[]>([""]);
  const [data, setData] = useState<{ entries: AuditEntry[]; next_cursor: string | null } | null>(null);
  const [error, setError] = useState("");
  const cursor = cursors[cursors.length - 1];

  useEffect(() => {
    setError("");
    api
      .audit({ ...filter, limit: pageSize, cursor })
      .then(setData)
      .catch((e) => setError(errorText(e)));
  }, [filter, cursor]);

  const set = (k: keyof typeof form) => (value: string) => setForm({ ...form, [k]: value });
  return (
    <section aria-labelledby="audit-h">
      <PageHead id="audit-h" title="Audit">
        <button
          onClick={() =>
            api
              .auditExport()
              .then((blob) => {
                const a = document.createElement("a");
                a.href = URL.createObjectURL(blob);
                a.download = "audit.jsonl";
                a.click();
                URL.revokeObjectURL(a.href);
              })
              .catch((e) => setError(errorText(e)))
          }
        >
          Export (JSON lines)
        </button>
      </PageHead>
      <p class="muted">
        Every administrative change of this organization: who made it, from where, and the state before and after (secrets are never shown). Entries are
        hash-chained: check an export with <code>outboxd audit verify FILE</code>.
      </p>
      <form
        class="filters"
        aria-label="Filters"
        onSubmit={(e) => {
          e.preventDefault();
          setCursors([""]);
          setFilter({
            actor: form.actor.trim(),
            action: form.action.trim(),
            target_type: form.target_type.trim(),
            target_id: form.target_id.trim(),
            since: toISO(form.since),
            until: toISO(form.until),
          });
        }}
      >
        <InputField id="a-actor" label="Actor" value={form.actor} onValue={set("actor")} placeholder="subject" />
        <InputField id="a-action" label="Action" value={form.action} onValue={set("action")} placeholder="webhook or webhook.update" />
        <InputField id="a-ttype" label="Target type" value={form.target_type} onValue={set("target_type")} placeholder="connector" />
        <InputField id="a-tid" label="Target id" value={form.target_id} onValue={set("target_id")} />
        <InputField id="a-since" label="From" type="datetime-local" value={form.since} onValue={set("since")} />
        <InputField id="a-until" label="Before" type="datetime-local" value={form.until} onValue={set("until")} />
        <div class="buttons">
          <button type="submit" class="primary">
            Apply filters
          </button>
        </div>
      </form>
      <ErrorAlert error={error} />
      {data && data.entries.length === 0 ? <Empty>No entries.</Empty> : null}
      {data && data.entries.length > 0 ? (
        <>
          <DataTable columns={["#", "When", "Who", "From", "Action", "Target", "Change"]}>
            {data.entries.map((e) => (
              <tr key={e.seq} data-action={e.action}>
                <td>{e.seq}</td>
                <td>{fmtTime(e.occurred_at)}</td>
                <td>
                  {e.actor.subject}
                  <div class="muted small">
                    {e.actor.kind}
                    {e.actor.role ? " · " + e.actor.role : ""}
                  </div>
                </td>
                <td>{e.actor.client_addr || <span class="muted">—</span>}</td>
                <td>
                  <code>{e.action}</code>
                </td>
                <td>
                  {e.target_type}
                  {e.target_id ? <div class="muted small">{e.target_id}</div> : null}
                </td>
                <td>
                  <details>
                    <summary>Before → after</summary>
                    <h3 class="small">Before</h3>
                    <Json value={e.before} />
                    <h3 class="small">After</h3>
                    <Json value={e.after} />
                  </details>
                </td>
              </tr>
            ))}
          </DataTable>
          <nav class="pager" aria-label="Pages">
            <button disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>
              Newer
            </button>
            <button disabled={!data.next_cursor} onClick={() => data.next_cursor && setCursors([...cursors, data.next_cursor])}>
              Older
            </button>
          </nav>
        </>
      ) : null}
    </section>
  );
}
