// Grants: "approve this and the next N like it for T minutes", narrower
// than "always allow". GrantOption is the approval card's form that
// approves with a grant; GrantsPage lists the organization's grants and
// revokes them.
import { useEffect, useState } from "preact/hooks";
import { request, type Invocation } from "../api";
import { DataTable, Empty, ErrorAlert, Flash, Loading, PageHead, errorText, fmtTime } from "../ui";
import { ConfirmButton } from "../forms";

const enc = encodeURIComponent;

export type Grant = {
  id: string;
  scope: "session" | "automation";
  scope_id: string;
  integration: string;
  action: string;
  fixed: Record<string, unknown>;
  granted: number;
  remaining: number;
  expires_at: string;
  active: boolean;
  created_by: string;
  created_from: string;
  created_at: string;
  revoked_at: string | null;
  revoked_by?: string;
  revoke_reason?: string;
};

export type GrantSpec = { count: number; minutes: number; fixed: string[] };

export const grants = {
  approveWithGrant: (id: string, grant: GrantSpec, digest?: string) =>
    request<{ invocation: Invocation; grant?: Grant }>("POST", "/v1/invocations/" + enc(id) + "/approve", { mode: "once", grant, digest }),
  list: (active: boolean) => request<{ grants: Grant[] }>("GET", "/v1/grants" + (active ? "?active=true" : "")),
  revoke: (id: string) => request<{ grant: Grant }>("DELETE", "/v1/grants/" + enc(id)),
};

/** fixable are the top-level params a grant may fix: present and not redacted. */
function fixable(params: Invocation["params"]): string[] {
  if (!params) return [];
  return Object.keys(params).filter((k) => !JSON.stringify(params[k]).includes("[REDACTED]"));
}

/**
 * GrantOption approves an invocation and grants the next ones like it in
 * its session (or automation): how many, for how long, and which params
 * must keep this invocation's values.
 */
export function GrantOption({ inv, onDecided }: { inv: Invocation; onDecided: (msg: string) => void }) {
  const [open, setOpen] = useState(false);
  const [count, setCount] = useState("5");
  const [minutes, setMinutes] = useState("30");
  const [fixed, setFixed] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  // Only for a session's or an automation's invocation, and never for one
  // that needs several approvers each time (the API refuses both).
  if ((!inv.session_id && !inv.automation_id) || (inv.approvals_required ?? 1) > 1) return null;
  const where = inv.automation_id ? "automation " + inv.automation_id : "session " + inv.session_id;
  const name = `${inv.integration}.${inv.action}`;
  if (!open) {
    return (
      <button type="button" aria-label={"Approve and grant more of " + name} onClick={() => setOpen(true)}>
        Approve &amp; grant the next few…
      </button>
    );
  }
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      const r = await grants.approveWithGrant(inv.id, { count: Number(count), minutes: Number(minutes), fixed }, inv.intent?.digest);
      const g = r.grant;
      onDecided(`${name} approved; the next ${g ? g.granted : count} like it in ${where} are allowed for ${minutes} minutes.`);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const params = fixable(inv.params);
  return (
    <form class="grant-form" aria-label={"Grant for " + name} onSubmit={submit}>
      <ErrorAlert error={error} />
      <p class="muted small">
        Approve this, and let the next invocations of {name} in {where} run without asking, until the count or the time runs out. The grant is revoked
        if the action's definition changes or its credential is replaced.
      </p>
      <div class="row">
        <label>
          Next
          <input type="number" min={1} max={1000} required value={count} aria-label="How many more" onInput={(e) => setCount(e.currentTarget.value)} />
        </label>
        <label>
          For minutes
          <input type="number" min={1} max={10080} required value={minutes} aria-label="For how many minutes" onInput={(e) => setMinutes(e.currentTarget.value)} />
        </label>
      </div>
      {params.length ? (
        <fieldset>
          <legend>Only with the same</legend>
          {params.map((p) => (
            <label key={p} class="check">
              <input
                type="checkbox"
                name="fixed"
                value={p}
                checked={fixed.includes(p)}
                onChange={(e) => setFixed((cur) => (e.currentTarget.checked ? [...cur, p] : cur.filter((x) => x !== p)))}
              />{" "}
              {p} <span class="muted">= {JSON.stringify(inv.params?.[p])}</span>
            </label>
          ))}
        </fieldset>
      ) : null}
      <div class="buttons">
        <button type="submit" class="primary" disabled={busy}>
          Approve &amp; grant
        </button>
        <button type="button" disabled={busy} onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** GrantsPage lists the organization's grants, the live ones first to see, and revokes them. */
export function GrantsPage() {
  const [list, setList] = useState<Grant[] | null>(null);
  const [activeOnly, setActiveOnly] = useState(true);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const load = (active = activeOnly) =>
    grants
      .list(active)
      .then((r) => setList(r.grants))
      .catch((e) => setError(errorText(e)));
  useEffect(() => {
    load();
  }, [activeOnly]);
  return (
    <section aria-labelledby="grants-h">
      <PageHead id="grants-h" title="Grants" />
      <p class="muted">
        A grant lets the next few invocations like an approved one run without asking, in one session or automation, until its count or time runs out.
        "Always allow" is a mode instead, and permanent.
      </p>
      <label class="check">
        <input type="checkbox" checked={activeOnly} onChange={(e) => setActiveOnly(e.currentTarget.checked)} /> Only active grants
      </label>
      <Flash message={flash} />
      <ErrorAlert error={error} />
      {list === null ? <Loading /> : null}
      {list && list.length === 0 ? <Empty>No grants.</Empty> : null}
      {list && list.length > 0 ? (
        <DataTable caption={list.length + " grants"} columns={["Action", "Where", "Only with", "Left", "Expires", "Granted by", "State"]} actions>
          {list.map((g) => (
            <tr key={g.id} data-grant={g.id}>
              <th scope="row">
                {g.integration}.{g.action}
              </th>
              <td>
                {g.scope} {g.scope_id}
              </td>
              <td class="wrap">
                {Object.keys(g.fixed).length
                  ? Object.entries(g.fixed)
                      .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
                      .join(", ")
                  : "any params"}
              </td>
              <td>
                {g.remaining} of {g.granted}
              </td>
              <td>{fmtTime(g.expires_at)}</td>
              <td>{g.created_by}</td>
              <td>{g.active ? "active" : g.revoked_at ? `revoked (${g.revoke_reason})` : "ended"}</td>
              <td class="buttons">
                {g.revoked_at ? null : (
                  <ConfirmButton
                    label={`Revoke grant of ${g.integration}.${g.action}`}
                    what="The next invocations like it wait for a human again."
                    onConfirm={async () => {
                      setError("");
                      try {
                        await grants.revoke(g.id);
                        setFlash(`Revoked the grant of ${g.integration}.${g.action}.`);
                        load();
                      } catch (e) {
                        setError(errorText(e));
                      }
                    }}
                  >
                    Revoke
                  </ConfirmButton>
                )}
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </section>
  );
}
