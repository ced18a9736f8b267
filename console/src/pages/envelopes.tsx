// Envelopes: the automations' envelopes in their own words (approval,
// result.status, timestamps), with Undo while one has not started.
import { useEffect, useState } from "preact/hooks";
import { api, type Envelope, type Invocation } from "../api";
import type { Session } from "../main";
import { DataTable, ErrorAlert, Flash, Json, Loading, ModeFrom, PageHead, Pager, ParamsForm, Status, Title, count, errorText, fmtTime, useStream } from "../ui";
import { useCatalog } from "./inbox";

const pageSize = 25;

export function Envelopes() {
  const [data, setData] = useState<{ invocations: Invocation[]; total: number } | null>(null);
  const [offset, setOffset] = useState(0);
  const [error, setError] = useState("");
  const [open, setOpen] = useState("");
  useEffect(() => {
    api
      .listInvocations({ origin: "envelope", limit: pageSize, offset })
      .then(setData)
      .catch((e) => setError(errorText(e)));
  }, [offset]);
  return (
    <section aria-labelledby="env-h">
      <Title id="env-h">Envelopes</Title>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (open.trim()) location.hash = "#/envelopes/" + encodeURIComponent(open.trim());
        }}
      >
        <label for="env-id">Open an envelope by its action id</label>
        <div class="row">
          <input id="env-id" value={open} onInput={(e) => setOpen(e.currentTarget.value)} placeholder="0193…" />
          <button type="submit">Open</button>
        </div>
      </form>
      <ErrorAlert error={error} />
      {data ? (
        <>
          <DataTable caption={count(data.total, "envelope")} columns={["External id", "Tool", "Automation", "Status", "Created"]}>
            {data.invocations.map((inv) => (
              <tr key={inv.id}>
                <td>
                  <a href={"#/envelopes/" + inv.id}>{inv.external_id ?? inv.id}</a>
                </td>
                <td>
                  {inv.integration}.{inv.action}
                </td>
                <td>{inv.automation_id ?? "—"}</td>
                <td>
                  <Status status={inv.status} />
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

export function EnvelopePage({ id, session }: { id: string; session: Session }) {
  const [env, setEnv] = useState<Envelope | null>(null);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const [busy, setBusy] = useState(false);
  const catalog = useCatalog();
  const load = () =>
    api
      .getEnvelope(id)
      .then(setEnv)
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    load();
  }, [id]);
  useStream(
    (m) => {
      if (m.data.invocation_id === id) load();
    },
    [id],
  );
  if (error && !env) return <ErrorAlert error={error} />;
  if (!env) return <Loading />;
  const undoable = ["pending", "approved"].includes(env.invocation_status) && env.result.status === "pending";
  return (
    <section aria-labelledby="envp-h">
      <PageHead id="envp-h" back={{ href: "#/envelopes", label: "Envelopes" }} title={"Envelope " + (env.external_id || env.action_id)}>
        <span class={"badge result-" + env.result.status}>result: {env.result.status}</span>
      </PageHead>
      <Flash message={flash} />
      <ErrorAlert error={error} />
      <div class="two-col">
        <div>
          <dl class="facts">
            <dt>action_id</dt>
            <dd>
              <code>{env.action_id}</code>
            </dd>
            <dt>tool</dt>
            <dd>{env.tool.name}</dd>
            <dt>automation_id</dt>
            <dd>{env.automation_id ?? "—"}</dd>
            <dt>approval</dt>
            <dd>
              <span class={"badge approval-" + env.approval}>{env.approval}</span>
            </dd>
            <dt>result.status</dt>
            <dd>{env.result.status}</dd>
            {env.result.error ? (
              <>
                <dt>result.error</dt>
                <dd>{env.result.error}</dd>
              </>
            ) : null}
            {env.result.provider_id ? (
              <>
                <dt>result.provider_id</dt>
                <dd>{env.result.provider_id}</dd>
              </>
            ) : null}
            <dt>risk</dt>
            <dd>{env.risk ?? "—"}</dd>
            <dt>mode</dt>
            <dd>
              <ModeFrom mode={env.mode} source={env.mode_source} />
            </dd>
            <dt>constraints</dt>
            <dd>
              {env.constraints.rate_bucket ? "rate_bucket " + env.constraints.rate_bucket : ""}
              {env.constraints.must_run_before ? " must_run_before " + fmtTime(env.constraints.must_run_before) : ""}
              {!env.constraints.rate_bucket && !env.constraints.must_run_before ? "—" : ""}
            </dd>
            <dt>invocation</dt>
            <dd>
              <a href={"#/invocations/" + env.action_id}>{env.invocation_status}</a>
            </dd>
          </dl>
          {undoable && session.canDecide ? (
            <button
              class="danger"
              disabled={busy}
              onClick={async () => {
                setBusy(true);
                setError("");
                try {
                  const r = await api.cancelEnvelope(env.action_id);
                  setEnv(r);
                  setFlash("Undone: the envelope was cancelled before it ran.");
                } catch (e) {
                  setError(errorText(e));
                } finally {
                  setBusy(false);
                }
              }}
            >
              Undo
            </button>
          ) : null}
        </div>
        <div>
          <h2>timestamps</h2>
          <dl class="facts">
            <dt>created_at</dt>
            <dd>{fmtTime(env.timestamps.created_at)}</dd>
            <dt>sent_at</dt>
            <dd>{fmtTime(env.timestamps.sent_at)}</dd>
            <dt>completed_at</dt>
            <dd>{fmtTime(env.timestamps.completed_at)}</dd>
            <dt>expires_at</dt>
            <dd>{fmtTime(env.expires_at)}</dd>
          </dl>
        </div>
      </div>
      <h2>args</h2>
      <ParamsForm params={env.args} schema={catalog.get(env.tool.source + "." + env.tool.action)?.params} />
      <h2>result.output</h2>
      <Json value={env.result.output} />
      <p class="muted">
        Status: <Status status={env.invocation_status} />
      </p>
    </section>
  );
}
