// Sealed intents in the inbox: the intent digest a card shows (the first
// characters of what the approval approves), what changed when an
// invocation came back for a new approval, and "Edit, then approve": the
// approver changes the params (a JSON object, validated by the API
// against the action's schema) and approves the edited request.
import { useState } from "preact/hooks";
import { api, type Invocation } from "../api";
import { ErrorAlert, errorText, escapeHidden } from "../ui";

/** IntentFacts shows the intent's digest and what changed since the last approval. */
export function IntentFacts({ inv }: { inv: Invocation }) {
  if (!inv.intent) return null;
  const changes = inv.intent.changes ?? [];
  return (
    <div class="intent">
      <p class="muted">
        Intent <code data-intent-digest={inv.intent.digest}>{inv.intent.short}</code>
        {inv.edited ? " (params edited by an approver)" : ""}
      </p>
      {changes.length > 0 ? (
        <p class="alert warn" role="status" data-intent-changes>
          Asked again: {changes.join(", ")} since the last approval.
        </p>
      ) : null}
    </div>
  );
}

/** EditApprove is the "Edit, then approve" form of a pending invocation. */
export function EditApprove({ inv, onDecided, onClose }: { inv: Invocation; onDecided: (msg: string, next?: Invocation) => void; onClose: () => void }) {
  // Invisible characters are written as escapes, which read as what they are.
  const [text, setText] = useState(escapeHidden(JSON.stringify(inv.params ?? {}, null, 2)));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const submit = async () => {
    let params: unknown;
    try {
      params = JSON.parse(text);
    } catch {
      setError("The params are not valid JSON.");
      return;
    }
    if (params === null || typeof params !== "object" || Array.isArray(params)) {
      setError("The params must be a JSON object.");
      return;
    }
    setBusy(true);
    setError("");
    try {
      const r = await api.approveEdited(inv.id, params as Record<string, unknown>, inv.intent?.digest);
      const short = r.invocation.intent?.short;
      // An approval short of the count leaves it pending: the caller shows
      // the edited params and the approvals so far, and the form closes.
      const pending = r.invocation.status === "pending";
      onDecided(
        `${inv.integration}.${inv.action} edited and approved` + (short ? ` (intent ${short})` : "") + (pending ? "; it waits for more approvals." : "."),
        r.invocation,
      );
      if (pending) onClose();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="edit-approve"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <ErrorAlert error={error} />
      <label for={"edit-" + inv.id}>Params to run with (JSON; redacted values left as shown keep the agent's values)</label>
      <textarea id={"edit-" + inv.id} rows={8} spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <div class="buttons">
        <button type="submit" class="primary" disabled={busy} aria-label={"Approve edited " + inv.integration + "." + inv.action}>
          Approve edited
        </button>
        <button type="button" onClick={onClose} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Edits lists who changed the params before approving, and what. */
export function Edits({ inv }: { inv: Invocation }) {
  if (!inv.edited || !inv.edits?.length) return null;
  const show = (v: unknown) => (v === undefined ? "—" : JSON.stringify(v));
  return (
    <div class="edits">
      <h2>Edited before approval</h2>
      <ul>
        {inv.edits.map((e, i) => (
          <li key={i} data-edit={i}>
            <span class="muted">
              {e.by}, intent <code>{e.digest.slice(0, 12)}</code>:
            </span>
            <ul>
              {e.diff.map((d) => (
                <li key={d.path}>
                  <code>{d.path}</code>: {show(d.from)} → {show(d.to)}
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ul>
    </div>
  );
}
