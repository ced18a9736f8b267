// Operations: the organization's own queue (its invocations by state with
// the oldest one's age, and its pause), the last hour's throughput and
// failure rate, dead letters, rate buckets, quiet hours, do-not-contact and
// what retention deleted.
// Admins and owners. River's queues, shared by every organization, are the
// operator's (`outboxd queue`) and not shown here.
import { useEffect, useState } from "preact/hooks";
import { api, type Invocation, type OrgQueue, type QuietWindow, type RateBucket, type RetentionStats, type Stats } from "../api";
import type { Session } from "../main";
import { Alert, Card, DataTable, Empty, ErrorAlert, Flash, InputField, PageHead, SelectField, errorText, fmtDuration, fmtTime, isStale, staleText } from "../ui";

const states = ["pending", "queued", "retrying", "running"];

export function Operations(_: { session: Session }) {
  const [stats, setStats] = useState<Stats | null>(null);
  const [buckets, setBuckets] = useState<RateBucket[] | null>(null);
  const [error, setError] = useState("");
  const refresh = () =>
    Promise.all([api.stats(), api.rateBuckets()])
      .then(([s, b]) => {
        setStats(s);
        setBuckets(b.buckets);
        setError("");
      })
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    refresh();
    const t = setInterval(refresh, 10000);
    return () => clearInterval(t);
  }, []);

  return (
    <section aria-labelledby="ops-h">
      <PageHead id="ops-h" title="Operations">
        <button onClick={refresh}>Refresh</button>
        {stats ? <span class="muted">as of {fmtTime(stats.generated_at)}</span> : null}
      </PageHead>
      <ErrorAlert error={error} />
      {stats ? <Throughput stats={stats} /> : null}
      {stats ? <Queue queue={stats.queue} onChange={refresh} /> : null}
      <DeadLetters onChange={refresh} />
      {buckets ? <Buckets buckets={buckets} /> : null}
      <div class="two-col">
        <QuietHours buckets={buckets ?? []} />
        <DoNotContact />
      </div>
      {stats && stats.retention ? <Retention rows={stats.retention} /> : null}
    </section>
  );
}

const tableNames: Record<string, string> = {
  action_invocations: "Invocations",
  invocation_events: "Invocation events",
  webhook_deliveries: "Webhook deliveries",
  audit_entries: "Audit trail entries",
};

function keepText(seconds: number | null): string {
  if (seconds === null) return "forever";
  const days = seconds / 86400;
  return Number.isInteger(days) ? `${days} days` : fmtDuration(seconds);
}

function Retention({ rows }: { rows: RetentionStats[] }) {
  return (
    <Card id="ret-h" title="Retention">
      <p class="muted">
        Finished rows older than their retention are deleted by the workers, in small batches. Unfinished invocations are never deleted. The operator sets the
        retention (<code>retention.*</code>).
      </p>
      <DataTable columns={["Kind", "Kept", "Last deletion", "Deleted then", "Deleted in all"]}>
        {rows.map((r) => (
          <tr key={r.table} data-table={r.table}>
            <td>{tableNames[r.table] ?? r.table}</td>
            <td>{keepText(r.keep_seconds)}</td>
            <td>{r.last_run_at ? fmtTime(r.last_run_at) : "none yet"}</td>
            <td>{r.last_deleted}</td>
            <td>{r.deleted_total}</td>
          </tr>
        ))}
      </DataTable>
    </Card>
  );
}

function Throughput({ stats }: { stats: Stats }) {
  const h = stats.last_hour;
  const peak = Math.max(1, ...h.buckets.map((b) => b.completed + b.failed + b.other));
  return (
    <Card id="tp-h" title="Last hour">
      <div class="kpis">
        <div class="kpi">
          <span class="kpi-v">{h.throughput_per_minute.toFixed(2)}</span>
          <span class="kpi-l">finished per minute</span>
        </div>
        <div class="kpi">
          <span class="kpi-v">{h.failure_rate === null ? "—" : (h.failure_rate * 100).toFixed(1) + "%"}</span>
          <span class="kpi-l">failure rate</span>
        </div>
        {Object.entries(h.ended).map(([k, v]) => (
          <div class="kpi" key={k}>
            <span class="kpi-v">{v}</span>
            <span class="kpi-l">{k}</span>
          </div>
        ))}
        {Object.entries(stats.in_flight).map(([k, v]) => (
          <div class="kpi" key={"f-" + k}>
            <span class="kpi-v">{v.count}</span>
            <span class="kpi-l">{k} now</span>
          </div>
        ))}
      </div>
      <figure class="bars" aria-label="Invocations finished per 5 minutes, completed and failed">
        {h.buckets.map((b) => (
          <div class="bar" key={b.start} title={`${fmtTime(b.start)}: ${b.completed} completed, ${b.failed} failed, ${b.other} other`}>
            <span class="bar-ok" style={{ height: (100 * b.completed) / peak + "%" }} />
            <span class="bar-fail" style={{ height: (100 * b.failed) / peak + "%" }} />
          </div>
        ))}
        <figcaption class="muted">Completed (green) and failed (red) per 5 minutes since {fmtTime(h.since)}.</figcaption>
      </figure>
    </Card>
  );
}

function Queue({ queue, onChange }: { queue: OrgQueue; onChange: () => void }) {
  const [error, setError] = useState("");
  return (
    <Card id="q-h" title={<>Queue {queue.paused ? <span class="badge status-paused">paused</span> : null}</>}>
      <p class="muted">
        This organization's unfinished actions by state, with the oldest one's age. Pausing holds this organization's actions (nothing is called, no attempt is
        spent) until it is resumed; other organizations are not affected.
      </p>
      {queue.paused ? (
        <Alert kind="info">
          Paused{queue.paused_at ? " since " + fmtTime(queue.paused_at) : ""}{queue.paused_by ? " by " + queue.paused_by : ""}: new and approved actions wait until it is resumed.
        </Alert>
      ) : null}
      <ErrorAlert error={error} />
      <DataTable columns={states}>
        <tr>
          {states.map((s) => {
            const st = queue.states[s];
            return (
              <td key={s} data-state={s}>
                {st ? st.count : 0}
                {st && st.age_seconds !== null ? <div class="muted small">{age(s, st.age_seconds)}</div> : null}
              </td>
            );
          })}
        </tr>
      </DataTable>
      <div class="buttons">
        <button
          class={queue.paused ? "primary" : "danger-outline"}
          onClick={async () => {
            setError("");
            try {
              await (queue.paused ? api.resume() : api.pause());
              onChange();
            } catch (e) {
              setError(errorText(e));
            }
          }}
        >
          {queue.paused ? "Resume this organization" : "Pause this organization"}
        </button>
      </div>
    </Card>
  );
}

/** age words a state's oldest invocation: how long it has waited or run. */
function age(state: string, seconds: number): string {
  return (state === "running" ? "running for " : "oldest ") + fmtDuration(Math.max(0, seconds));
}

function DeadLetters({ onChange }: { onChange: () => void }) {
  const [data, setData] = useState<{ dead_letters: Invocation[]; total: number } | null>(null);
  const [selected, setSelected] = useState(new Set<string>());
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const load = () =>
    api
      .deadLetters(50, 0)
      .then((d) => {
        setData(d);
        setSelected(new Set());
      })
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    load();
  }, []);
  const run = async (op: "retry" | "discard", ids: string[]) => {
    setError("");
    try {
      const r = await (op === "retry" ? api.retryDeadLetters(ids) : api.discardDeadLetters(ids));
      const done = r.results.filter((x) => x.status === "retried" || x.status === "discarded").length;
      const failed = r.results.filter((x) => x.status !== "retried" && x.status !== "discarded");
      setFlash(`${op === "retry" ? "Replayed" : "Discarded"} ${done} of ${ids.length}.` + (failed.length ? " " + failed.map((f) => `${f.id}: ${f.error}`).join("; ") : ""));
      load();
      onChange();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const all = data?.dead_letters ?? [];
  return (
    <Card id="dl-h" title={<>Dead letters {data ? <span class="muted">({data.total})</span> : null}</>}>
      <Flash message={flash} />
      <ErrorAlert error={error} />
      {all.length === 0 ? (
        <Empty>No dead letters.</Empty>
      ) : (
        <>
          <div class="buttons">
            <button disabled={selected.size === 0} onClick={() => run("retry", [...selected])}>
              Replay selected ({selected.size})
            </button>
            <button class="danger-outline" disabled={selected.size === 0} onClick={() => run("discard", [...selected])}>
              Discard selected ({selected.size})
            </button>
          </div>
          <DataTable
            columns={[
              <input
                type="checkbox"
                aria-label="Select all dead letters"
                checked={selected.size === all.length}
                onChange={(e) => setSelected(e.currentTarget.checked ? new Set(all.map((d) => d.id)) : new Set())}
              />,
              "Action",
              "Error",
              "Failed",
            ]}
            actions
          >
            {all.map((d) => (
              <tr key={d.id} data-dead-letter={d.id}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select ${d.integration}.${d.action} ${d.id}`}
                    checked={selected.has(d.id)}
                    onChange={(e) => {
                      const next = new Set(selected);
                      if (e.currentTarget.checked) next.add(d.id);
                      else next.delete(d.id);
                      setSelected(next);
                    }}
                  />
                </td>
                <td>
                  <a href={"#/invocations/" + d.id}>
                    {d.integration}.{d.action}
                  </a>
                </td>
                <td class="wrap">{d.error}</td>
                <td>{fmtTime(d.dead_lettered_at)}</td>
                <td class="buttons">
                  <button onClick={() => run("retry", [d.id])} aria-label={`Replay ${d.integration}.${d.action} ${d.id}`}>
                    Replay
                  </button>
                  <button class="danger-outline" onClick={() => run("discard", [d.id])} aria-label={`Discard ${d.integration}.${d.action} ${d.id}`}>
                    Discard
                  </button>
                </td>
              </tr>
            ))}
          </DataTable>
        </>
      )}
    </Card>
  );
}

function Buckets({ buckets }: { buckets: RateBucket[] }) {
  return (
    <Card id="rb-h" title="Rate buckets">
      <DataTable columns={["Bucket", "Rate", "Fill", "Leases", "Blocked until"]}>
        {buckets.flatMap((b) =>
          (b.states.length ? b.states : [null]).map((s, i) => (
            <tr key={b.name + i}>
              <th scope="row">
                {b.name}
                {s?.source ? <div class="muted small">{s.source}</div> : null}
                <div class="muted small">{b.scope}</div>
              </th>
              <td>
                {b.rate} / {fmtDuration(b.interval_seconds)}, burst {b.burst}
              </td>
              <td>
                {s ? (
                  <>
                    <meter min={0} max={b.burst} value={s.tokens} aria-label={`${b.name} fill`} />
                    <span class="small"> {s.tokens.toFixed(1)} / {b.burst}</span>
                  </>
                ) : (
                  <span class="muted">not used yet</span>
                )}
              </td>
              <td>{s ? (b.max_concurrency ? `${s.leases} / ${b.max_concurrency}` : s.leases) : "—"}</td>
              <td>{s?.blocked_until ? fmtTime(s.blocked_until) : "—"}</td>
            </tr>
          )),
        )}
      </DataTable>
    </Card>
  );
}

function QuietHours({ buckets }: { buckets: RateBucket[] }) {
  const [rows, setRows] = useState<QuietWindow[] | null>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const load = () => api.getQuietHours(setEtag).then((r) => setRows(r.windows));
  useEffect(() => {
    load().catch((e) => setError(errorText(e)));
  }, []);
  const update = (i: number, k: keyof QuietWindow, v: string) => setRows(rows!.map((r, j) => (j === i ? { ...r, [k]: v } : r)));
  return (
    <Card id="qh-h" title="Quiet hours">
      <p class="muted">Jobs in a window wait until it ends; an empty bucket is every job of the organization.</p>
      <ErrorAlert error={error} />
      {flash ? <Alert kind="ok">{flash}</Alert> : null}
      {rows ? (
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            setError("");
            setFlash("");
            try {
              // If-Match the version read: another admin's save meanwhile is a 412, not overwritten.
              const r = await api.putQuietHours(rows, etag, setEtag);
              setRows(r.windows);
              setFlash("Quiet hours saved.");
            } catch (err) {
              if (isStale(err)) {
                await load().catch(() => {});
                setError(staleText("the quiet hours"));
              } else setError(errorText(err));
            }
          }}
        >
          {rows.map((r, i) => (
            <fieldset class="qh-row" key={i}>
              <legend>Window {i + 1}</legend>
              <SelectField
                id={`qh-b-${i}`}
                label="Bucket"
                value={r.bucket}
                options={["", ...buckets.map((b) => b.name)]}
                optionLabel={(b) => b || "every job"}
                onValue={(v) => update(i, "bucket", v)}
              />
              <InputField id={`qh-z-${i}`} label="Time zone" value={r.time_zone} required placeholder="Europe/Paris" onValue={(v) => update(i, "time_zone", v)} />
              <InputField id={`qh-s-${i}`} label="Start" type="time" value={r.start} required onValue={(v) => update(i, "start", v)} />
              <InputField id={`qh-e-${i}`} label="End" type="time" value={r.end} required onValue={(v) => update(i, "end", v)} />
              <button type="button" class="link" onClick={() => setRows(rows.filter((_, j) => j !== i))}>
                Remove window {i + 1}
              </button>
            </fieldset>
          ))}
          <div class="buttons">
            <button type="button" onClick={() => setRows([...rows, { bucket: "", time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC", start: "22:00", end: "07:00" }])}>
              Add window
            </button>
            <button type="submit" class="primary">
              Save quiet hours
            </button>
          </div>
        </form>
      ) : null}
    </Card>
  );
}

function DoNotContact() {
  const [text, setText] = useState<string | null>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const load = () => api.getDoNotContact(setEtag).then((r) => setText(r.patterns.join("\n")));
  useEffect(() => {
    load().catch((e) => setError(errorText(e)));
  }, []);
  return (
    <Card id="dnc-h" title="Do not contact">
      <ErrorAlert error={error} />
      {flash ? <Alert kind="ok">{flash}</Alert> : null}
      {text !== null ? (
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            setError("");
            setFlash("");
            try {
              const patterns = text.split("\n").map((s) => s.trim()).filter(Boolean);
              const r = await api.putDoNotContact(patterns, etag, setEtag);
              setText(r.patterns.join("\n"));
              setFlash("Do-not-contact list saved.");
            } catch (err) {
              if (isStale(err)) {
                await load().catch(() => {});
                setError(staleText("the do-not-contact list"));
              } else setError(errorText(err));
            }
          }}
        >
          <label for="dnc">Patterns, one per line</label>
          <textarea id="dnc" rows={6} value={text} aria-describedby="dnc-help" onInput={(e) => setText(e.currentTarget.value)} />
          <small id="dnc-help" class="help">
            Globs matched case-insensitively against recipients (Slack's channel), such as #general or C09*.
          </small>
          <div class="buttons">
            <button type="submit" class="primary">
              Save do-not-contact
            </button>
          </div>
        </form>
      ) : null}
    </Card>
  );
}
