// Action modes: every action of the catalog with its inferred default, the
// override at org or automation scope, drift and risk tier, edited in
// place. PUT replaces the whole set, so a save reads the set again, applies
// the rows changed here and writes it back (with If-Match when the API
// gives an ETag; a 412 reloads with a message).
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, type CatalogAction } from "../api";
import { admin, type Modes } from "../admin";
import type { Session } from "../main";
import { DataTable, ErrorAlert, Flash, Loading, PageHead, Risk } from "../ui";
import { FieldError, ReadOnlyNote, apiFailure, type FieldErrors } from "../forms";

const modes = ["allow", "require_approval", "deny"];
const INHERIT = "";

type Action = CatalogAction & { risk_tier?: string; no_credential?: boolean };

/** inferred is the mode an action's tier gives when nothing overrides it (policy.Tier.DefaultMode). */
function inferred(a: Action): string {
  const t = a.risk_tier ?? "";
  return t === "R0" || t === "R1" ? "allow" : "require_approval";
}

/** autoExecutes says whether the tier may run unattended (R3, R4 never do). */
function autoExecutes(a: Action): boolean {
  const t = a.risk_tier ?? "";
  return t === "R0" || t === "R1" || t === "R2";
}

export function ModesPage({ session, automation }: { session: Session; automation?: string }) {
  const canEdit = session.canDecide;
  const [catalog, setCatalog] = useState<Action[] | null>(null);
  const [orgModes, setOrgModes] = useState<Modes>({});
  const [current, setCurrent] = useState<Modes | null>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [edits, setEdits] = useState<Modes>({});
  const [scopeInput, setScopeInput] = useState(automation ?? "");
  const [error, setError] = useState("");
  const [fields, setFields] = useState<FieldErrors>({});
  const [flash, setFlash] = useState("");
  const [busy, setBusy] = useState(false);
  // The scope the table shows: until the new scope's modes arrive, the
  // page shows it is loading rather than the old scope's table.
  const [loaded, setLoaded] = useState<string | null>(null);

  const load = async () => {
    // An admin sets modes for the actions of the providers with no
    // credential stored too (listed disabled, source no_credential), so
    // that they are in place before the first credential is.
    const [cat, org] = await Promise.all([canEdit ? api.settableCatalog() : api.catalog(), admin.getModes(undefined, automation ? () => {} : setEtag)]);
    const noCredential = new Set(cat.sources.filter((s) => s.status === "no_credential").map((s) => s.source));
    setCatalog((cat.actions as Action[]).map((a) => ({ ...a, no_credential: noCredential.has(a.source) })));
    setOrgModes(org);
    setCurrent(automation ? await admin.getModes(automation, setEtag) : org);
    setEdits({});
    setLoaded(automation ?? "");
  };
  useEffect(() => {
    setLoaded(null);
    setFlash("");
    setError("");
    setFields({});
    setScopeInput(automation ?? "");
    load().catch((e) => setError(apiFailure(e).message));
  }, [automation]);

  const save = async () => {
    setBusy(true);
    setError("");
    setFields({});
    setFlash("");
    try {
      // Read-modify-write: the set as stored now, with this page's changes,
      // sent If-Match the version this page showed (when the API gives
      // ETags), so a change made meanwhile is a 412 rather than lost.
      const fresh = await admin.getModes(automation, () => {});
      const next: Modes = { ...fresh };
      for (const [k, v] of Object.entries(edits)) {
        if (v === INHERIT) delete next[k];
        else next[k] = v;
      }
      const saved = await admin.putModes(automation, next, etag, setEtag);
      setCurrent(saved);
      if (!automation) setOrgModes(saved);
      setEdits({});
      setFlash(`Saved ${Object.keys(edits).length} change(s) to the ${automation ? "automation " + automation : "organization"}'s modes.`);
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) {
        await load().catch(() => {});
        setError("Someone changed these modes meanwhile: the page was reloaded with theirs. Make your changes again.");
      } else {
        const f = apiFailure(e);
        setFields(f.fields);
        setError(f.message);
      }
    } finally {
      setBusy(false);
    }
  };

  if (error && loaded === null) return <ErrorAlert error={error} />;
  if (!catalog || !current || loaded !== (automation ?? "")) return <Loading />;
  const changed = Object.keys(edits).length;
  const scopeName = automation ? "Automation " + automation : "Organization";
  return (
    <section aria-labelledby="modes-h">
      <PageHead id="modes-h" title={automation ? `Action modes: automation ${automation}` : "Action modes"}>
        {changed ? <span class="badge status-pending">{changed} unsaved</span> : null}
      </PageHead>
      <form
        class="scope"
        onSubmit={(e) => {
          e.preventDefault();
          const a = scopeInput.trim();
          location.hash = a ? "#/modes/" + encodeURIComponent(a) : "#/modes";
        }}
      >
        <div class="field">
          <label for="modes-scope">Automation (empty for the organization)</label>
          <input id="modes-scope" value={scopeInput} placeholder="automation id" onInput={(e) => setScopeInput(e.currentTarget.value)} />
        </div>
        <button type="submit">Show scope</button>
      </form>
      <p class="muted">
        An automation's override wins over the organization's, which wins over the default the action's risk tier infers (R0 and R1 allow, the rest require
        approval). R3 and R4 actions never run unattended, whatever allows them. A drifted connector tool reviewed as allow runs as require_approval.
        {canEdit ? " Actions marked no credential belong to a provider whose credential is not stored yet: their modes apply once it is." : ""}
      </p>
      {canEdit ? null : <ReadOnlyNote />}
      <Flash message={flash} />
      <ErrorAlert error={error} />
      <DataTable caption={scopeName + ": " + catalog.length + " actions"} columns={["Action", "Risk", "Inferred default", "Organization override", ...(automation ? ["Automation override"] : []), "Effective", "Drift", "Override"]}>
        {catalog.map((a) => {
          const key = a.source + ":" + a.action;
          const cur = current[key] ?? INHERIT;
          const value = key in edits ? edits[key] : cur;
          const org = orgModes[key];
          const auto = automation ? (key in edits ? edits[key] : current[key]) : undefined;
          const orgNow = automation ? org : key in edits ? edits[key] : org;
          let eff = auto || orgNow || inferred(a);
          let why = auto ? "automation override" : orgNow ? "organization override" : "inferred default";
          if (!auto && !orgNow && a.mode_source === "org_default") {
            // A connector tool's review acts as the org default.
            eff = a.mode;
            why = "tool review";
          }
          if (eff === "allow" && !autoExecutes(a)) {
            eff = "require_approval";
            why = "risk tier";
          } else if (eff === "allow" && a.drifted && !auto && !orgNow) {
            eff = "require_approval";
            why = "drift guard";
          }
          const id = "mode-" + key.replace(/[^A-Za-z0-9_-]/g, "_");
          return (
            <tr key={key} data-action={key} class={key in edits ? "changed" : ""}>
              <th scope="row">
                <code>{key}</code>
                {a.no_credential ? (
                  <>
                    {" "}
                    <a class="badge" href="#/credentials" data-no-credential title={`No ${a.source} credential is stored yet: the action cannot run until one is.`}>
                      no credential
                    </a>
                  </>
                ) : null}
                <div class="muted small desc" title={a.description}>
                  {a.description}
                </div>
              </th>
              <td>
                <Risk risk={a.risk_level} /> <span class="muted small">{a.risk_tier}</span>
              </td>
              <td class="mode">{inferred(a)}</td>
              <td class="mode">{org ?? <span class="muted">none</span>}</td>
              {automation ? <td class="mode">{current[key] ?? <span class="muted">none</span>}</td> : null}
              <td class="mode" data-effective>
                {eff} <div class="muted small">{why}</div>
              </td>
              <td>{a.drifted ? <span class="badge drift">drifted</span> : <span class="muted">—</span>}</td>
              <td>
                {canEdit ? (
                  <>
                    <label class="sr-only" for={id}>
                      Override for {key}
                    </label>
                    <select
                      id={id}
                      value={value}
                      aria-invalid={fields[key] ? true : undefined}
                      aria-describedby={fields[key] ? id + "-err" : undefined}
                      onChange={(e) => {
                        const v = e.currentTarget.value;
                        const next = { ...edits };
                        if (v === cur) delete next[key];
                        else next[key] = v;
                        setEdits(next);
                      }}
                    >
                      <option value={INHERIT}>{automation ? "inherit (organization)" : "inherit (inferred)"}</option>
                      {modes.map((m) => (
                        <option key={m} value={m}>
                          {m}
                        </option>
                      ))}
                    </select>
                    <FieldError id={id} message={fields[key]} />
                  </>
                ) : (
                  <span>{cur || <span class="muted">inherit</span>}</span>
                )}
              </td>
            </tr>
          );
        })}
      </DataTable>
      {canEdit ? (
        <div class="buttons">
          <button class="primary" disabled={busy || changed === 0} onClick={save}>
            Save changes
          </button>
          <button disabled={busy || changed === 0} onClick={() => setEdits({})}>
            Discard changes
          </button>
        </div>
      ) : null}
    </section>
  );
}
