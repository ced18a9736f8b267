// Connectors: the organization's MCP connectors, validation, and the tool
// review (risk, reviewed mode, drift); confirming stores {mode, hash} for
// the definition shown.
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, type Connector, type ConnectorDiagnosis, type ToolReview } from "../api";
import { Alert, Card, DataTable, Empty, ErrorAlert, Flash, Loading, PageHead, Risk, Select, Shown, Title, errorText } from "../ui";
import { admin } from "../admin";
import { ConfirmButton } from "../forms";
import { ConnectorForm } from "./connectorform";

const modes = ["allow", "require_approval", "deny"];

export function Connectors() {
  const [list, setList] = useState<Connector[] | null>(null);
  const [error, setError] = useState("");
  const [diag, setDiag] = useState<Record<string, ConnectorDiagnosis | string>>({});
  const load = () =>
    api
      .connectors()
      .then((r) => setList(r.connectors))
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    load();
  }, []);
  return (
    <section aria-labelledby="con-h">
      <Title id="con-h">Connectors</Title>
      <ErrorAlert error={error} />
      {list && list.length === 0 ? <Empty>No MCP connectors yet.</Empty> : null}
      <ul class="cards">
        {list?.map((c) => {
          const d = diag[c.id];
          return (
            <li class="card" key={c.id}>
              <div class="card-head">
                <h2>
                  <a href={"#/connectors/" + c.id}>{c.name}</a>
                </h2>
                <span class={"badge " + (c.enabled ? "status-completed" : "status-cancelled")}>{c.enabled ? "enabled" : "disabled"}</span>
              </div>
              <dl class="facts">
                <dt>URL</dt>
                <dd class="wrap">{c.url}</dd>
                <dt>Source</dt>
                <dd>
                  <code>{c.source_id}</code>
                </dd>
                <dt>Auth</dt>
                <dd>{c.auth.type}</dd>
              </dl>
              <div class="buttons">
                <button
                  onClick={async () => {
                    setDiag({ ...diag, [c.id]: "Validating…" });
                    try {
                      const r = await api.validateConnector(c.id);
                      setDiag((cur) => ({ ...cur, [c.id]: r }));
                    } catch (e) {
                      setDiag((cur) => ({ ...cur, [c.id]: errorText(e) }));
                    }
                  }}
                >
                  Validate <span class="sr-only">{c.name}</span>
                </button>
                <a class="button" href={"#/connectors/" + c.id}>
                  Review tools <span class="sr-only">of {c.name}</span>
                </a>
              </div>
              <div aria-live="polite">
                {typeof d === "string" ? <p>{d}</p> : null}
                {d && typeof d === "object" ? (
                  <Alert kind={d.reachable ? "ok" : "error"}>
                    {d.reachable ? `Reachable: ${d.server_name ?? "server"} (protocol ${d.protocol_version ?? "?"}), ${d.tool_count ?? 0} tools.` : "Unreachable."}
                    {d.errors?.length ? " " + d.errors.join("; ") : ""}
                  </Alert>
                ) : null}
              </div>
            </li>
          );
        })}
      </ul>
      <Card id="con-new-h" title="Add a connector">
        <ConnectorForm done={(c) => (location.hash = "#/connectors/" + c.id)} />
      </Card>
    </section>
  );
}

export function ConnectorPage({ id }: { id: string }) {
  const [conn, setConn] = useState<Connector | null>(null);
  const [tools, setTools] = useState<ToolReview[] | null>(null);
  const [choice, setChoice] = useState<Record<string, string>>({});
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const [toolsError, setToolsError] = useState("");
  // The connector and its tools load apart: a connector whose server
  // cannot be listed (a wrong secret) can still be edited.
  const load = () => {
    api
      .connector(id)
      .then((c) => setConn(c.connector))
      .catch((e) => setError(errorText(e)));
    setToolsError("");
    api
      .connectorTools(id)
      .then((t) => {
        setTools(t.tools);
        setChoice(Object.fromEntries(t.tools.map((x) => [x.name, x.reviewed_mode || x.mode])));
      })
      .catch((e) => {
        setTools([]);
        setToolsError("Its tools cannot be listed: " + errorText(e));
      });
  };
  useEffect(() => {
    load();
  }, [id]);
  const confirm = async (names: string[]) => {
    setError("");
    setFlash("");
    try {
      // Each mode is for the definition shown (its hash): a tool the
      // server changed since is refused (tool_changed) and nothing stored.
      const shown = Object.fromEntries((tools ?? []).map((t) => [t.name, t.hash]));
      const r = await api.reviewTools(id, Object.fromEntries(names.map((n) => [n, { mode: choice[n], hash: shown[n] }])));
      setTools(r.tools);
      setFlash(`Confirmed ${names.join(", ")}.`);
    } catch (e) {
      if (e instanceof ApiError && e.code === "tool_changed") {
        // Show what the server defines now, then why (the modes chosen
        // stay): the next confirmation is for that.
        await api
          .connectorTools(id)
          .then((t) => setTools(t.tools))
          .catch(() => {});
      }
      setError(errorText(e));
    }
  };
  if (error && !conn) return <ErrorAlert error={error} />;
  if (!tools || !conn) return <Loading />;
  const drifted = tools.filter((t) => t.drifted).length;
  return (
    <section aria-labelledby="conp-h">
      <PageHead id="conp-h" back={{ href: "#/connectors", label: "Connectors" }} title={conn.name + ": tool review"}>
        {drifted ? <span class="badge drift">{drifted} drifted</span> : null}
      </PageHead>
      <p class="muted">
        Confirming a mode stores it with the hash of the tool's definition shown here; a tool the server changed since it was shown is refused and the
        list shown again. A tool whose definition changed since its review has drifted: a reviewed allow runs as require_approval until it is confirmed
        again.
      </p>
      <Flash message={flash} />
      <ErrorAlert error={error} />
      <ErrorAlert error={toolsError} />
      <DataTable columns={["Tool", "Risk", "Effective mode", "Reviewed", "Mode to confirm"]} actions>
        {tools.map((t) => (
          <tr key={t.name} data-tool={t.name} class={t.drifted ? "drifted" : ""}>
            <th scope="row">
              <Shown text={t.name} />
              {t.drifted ? (
                <span class="badge drift" title="The definition changed since it was reviewed">
                  drifted
                </span>
              ) : null}
              <div class="muted small">
                <Shown text={t.description} />
              </div>
            </th>
            <td>
              <Risk risk={t.risk_level} />
            </td>
            <td>
              {t.mode} <div class="muted small">{t.mode_source}</div>
            </td>
            <td>{t.reviewed_mode ?? <span class="muted">not reviewed</span>}</td>
            <td>
              <label class="sr-only" for={"mode-" + t.name}>
                Mode for {t.name}
              </label>
              <Select id={"mode-" + t.name} value={choice[t.name]} options={modes} onValue={(v) => setChoice({ ...choice, [t.name]: v })} />
            </td>
            <td>
              <button onClick={() => confirm([t.name])} aria-label={"Confirm " + t.name}>
                Confirm
              </button>
            </td>
          </tr>
        ))}
      </DataTable>
      {tools.length > 1 ? (
        <div class="buttons">
          <button class="primary" onClick={() => confirm(tools.map((t) => t.name))}>
            Confirm all
          </button>
        </div>
      ) : null}
      <Card id="conp-edit-h" title="Settings">
        <ConnectorForm
          key={conn.id + conn.auth.type}
          conn={conn}
          done={(c) => {
            setConn(c);
            setFlash("Saved " + c.name + ".");
            load();
          }}
        />
        <div class="buttons">
          <ConfirmButton
            label="Delete connector"
            what={`${conn.name}, its secret and its tool reviews are removed.`}
            onConfirm={async () => {
              try {
                await admin.deleteConnector(conn.id);
                location.hash = "#/connectors";
              } catch (e) {
                setError(errorText(e));
              }
            }}
          />
        </div>
      </Card>
    </section>
  );
}
