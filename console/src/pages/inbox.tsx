// Inbox: the organization's pending invocations, newest first, kept live
// by the event stream, with the decision buttons for admins and owners.
// For whoever may decide, what they may decide comes first and is what
// the inbox counts ("Waiting for you"); the requests of other approver
// groups follow, collapsed ("Other approvers' requests"), each naming the
// group that decides it.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, type CatalogAction, type Invocation } from "../api";
import type { Session } from "../main";
import { GrantOption } from "./grants";
import { ApprovalProgress, mayDecide } from "./approvals";
import { Preview } from "../preview";
import { EditApprove, IntentFacts } from "./intent";
import { Alert, AskerFacts, Empty, ErrorAlert, Flash, Loading, PageHead, ParamsForm, Risk, Shown, errorText, fmtDuration, fmtTime, useNow, useStream } from "../ui";

/** useCatalog loads the action schemas the params forms are laid out by. */
export function useCatalog(): Map<string, CatalogAction> {
  const [catalog, setCatalog] = useState(new Map<string, CatalogAction>());
  useEffect(() => {
    api
      .catalog()
      .then((c) => setCatalog(new Map(c.actions.map((a) => [a.source + "." + a.action, a]))))
      .catch(() => {}); // the forms fall back to the params' own keys
  }, []);
  return catalog;
}

export function Inbox({ session }: { session: Session }) {
  const [items, setItems] = useState<Invocation[] | null>(null);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const catalog = useCatalog();
  const now = useNow();

  // A list in flight may predate an event that arrives meanwhile: such an
  // event makes the inbox list again once the list lands.
  const listing = useRef(false);
  const stale = useRef(false);
  const load = () => {
    listing.current = true;
    stale.current = false;
    api
      .listInvocations({ status: "pending", limit: 100 })
      .then((r) => setItems(r.invocations))
      .catch((e) => setError(errorText(e)))
      .finally(() => {
        listing.current = false;
        if (stale.current) load();
      });
  };
  useEffect(() => {
    load();
  }, []);

  useStream((m) => {
    if (listing.current) {
      stale.current = true;
      return;
    }
    const inv = m.data.invocation;
    if (m.event === "action_approval_request" && inv.status === "pending") {
      // The event's invocation lacks what a read adds for the caller (the
      // approvals so far and needed, its approver group, whether they may
      // decide), which says whose inbox it lands in: it is added once read
      // (as the event has it if the read fails; the API checks a decision
      // again anyway).
      const add = (next: Invocation) =>
        setItems((cur) => (cur === null ? cur : cur.some((i) => i.id === next.id) ? cur.map((i) => (i.id === next.id ? next : i)) : [next, ...cur]));
      api
        .getInvocation(inv.id)
        .then((r) => r.invocation.status === "pending" && add(r.invocation))
        .catch(() => add(inv));
    } else {
      setItems((cur) => cur && cur.filter((i) => i.id !== m.data.invocation_id));
      if (m.event === "action_approval_result") {
        const by = m.data.decided_by ? " by " + m.data.decided_by : "";
        setFlash(`${inv.integration}.${inv.action} was ${m.data.status}${by}.`);
      }
    }
  }, []);

  const card = (inv: Invocation) => (
    <li key={inv.id} class="card pending-card" data-invocation={inv.id}>
      <PendingCard inv={inv} now={now} schema={catalog.get(inv.integration + "." + inv.action)} session={session}
        onDecided={(msg, next) => {
          setFlash(msg);
          // An approval short of the count: the card shows it.
          if (next?.status === "pending") setItems((cur) => cur && cur.map((i) => (i.id === next.id ? next : i)));
        }}
      />
    </li>
  );
  // Members decide nothing: they read one list. Whoever may decide reads
  // theirs first, and the rest apart.
  const split = session.canDecide;
  const mine = items?.filter((i) => !split || mayDecide(i, true)) ?? [];
  const others = split ? items?.filter((i) => !mayDecide(i, true)) ?? [] : [];
  const count = items === null ? "" : split ? `${mine.length} waiting for you` + (others.length ? ` · ${others.length} for other approvers` : "") : `${items.length} waiting for a decision`;

  return (
    <section aria-labelledby="inbox-h">
      <PageHead id="inbox-h" title="Inbox">
        <span class="muted inbox-count">{count}</span>
      </PageHead>
      {!session.canDecide ? <Alert kind="info">You can read the inbox; approving and denying are for admins and owners.</Alert> : null}
      <Flash message={flash} class="sr-flash" />
      <ErrorAlert error={error} />
      {items === null ? <Loading /> : null}
      {items && items.length === 0 ? <Empty>Nothing is waiting for approval.</Empty> : null}
      {split && items && items.length > 0 ? (
        <>
          <h2 id="inbox-mine-h" class="inbox-part">Waiting for you ({mine.length})</h2>
          {mine.length === 0 ? <Empty>Nothing is waiting for you; the requests below are for other approvers to decide.</Empty> : null}
        </>
      ) : null}
      <ul class="cards inbox-mine" aria-label={split ? "Waiting for you" : "Pending invocations"}>
        {mine.map(card)}
      </ul>
      {others.length > 0 ? (
        <details class="inbox-others">
          <summary>
            <h2 class="inbox-part">Other approvers' requests ({others.length})</h2>
          </summary>
          <p class="muted">Requests an approver group you are not in decides; you can read them here.</p>
          <ul class="cards" aria-label="Other approvers' requests">
            {others.map(card)}
          </ul>
        </details>
      ) : null}
    </section>
  );
}

function PendingCard({ inv, now, schema, session, onDecided }: { inv: Invocation; now: number; schema?: CatalogAction; session: Session; onDecided: (msg: string, next?: Invocation) => void }) {
  const left = inv.expires_at ? (new Date(inv.expires_at).getTime() - now) / 1000 : null;
  return (
    <article aria-labelledby={"t-" + inv.id}>
      <header class="card-head">
        <h2 id={"t-" + inv.id}>
          <a href={"#/invocations/" + inv.id}>
            {inv.integration}.{inv.action}
          </a>
        </h2>
        <Risk risk={inv.risk_level} />
      </header>
      <dl class="facts">
        <AskerFacts inv={inv} />
        <dt>Asked</dt>
        <dd>{fmtTime(inv.created_at)}</dd>
        <dt>Time left</dt>
        <dd class={left !== null && left < 60 ? "urgent" : ""}>
          {left === null ? "no expiry" : left > 0 ? <span aria-label={"expires in " + fmtDuration(left)}>{fmtDuration(left)}</span> : "expired"}
        </dd>
      </dl>
      {schema?.description ? (
        <details class="about">
          <summary>About this action</summary>
          <p class="muted">
            <Shown text={schema.description} />
          </p>
        </details>
      ) : null}
      <Preview inv={inv} />
      <IntentFacts inv={inv} />
      <ParamsForm params={inv.params} schema={schema?.params} />
      {session.canDecide && !mayDecide(inv, true) ? (
        <p class="decided-by">Decided by {inv.approver_group ? <>approver group <strong>{inv.approver_group}</strong></> : "the organization's admins and owners"}</p>
      ) : null}
      <ApprovalProgress inv={inv} canDecide={session.canDecide} />
      {mayDecide(inv, session.canDecide) ? <Decision inv={inv} onDecided={onDecided} /> : null}
    </article>
  );
}

/** Decision holds Approve, Approve & grant, Approve & always allow (permanent), and Deny with a reason. */
export function Decision({ inv, onDecided }: { inv: Invocation; onDecided: (msg: string, next?: Invocation) => void }) {
  const [denying, setDenying] = useState(false);
  const [editing, setEditing] = useState(false);
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const act = async (fn: () => Promise<{ invocation: Invocation }>, what: string) => {
    setBusy(true);
    setError("");
    try {
      const r = await fn();
      // The status repeats the decision until the invocation moves on
      // (approved → executing → completed); say it only when it adds news.
      const status = r.invocation.status;
      onDecided(`${inv.integration}.${inv.action} ${what}` + (what.startsWith(status) ? "." : `; it is ${status} now.`), r.invocation);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const name = `${inv.integration}.${inv.action}`;
  return (
    <div class="decision">
      <ErrorAlert error={error} />
      {denying ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void act(() => api.deny(inv.id, reason.trim()), "denied");
          }}
        >
          <label for={"reason-" + inv.id}>Deny and tell the agent why (the agent receives this text)</label>
          <textarea id={"reason-" + inv.id} rows={2} maxLength={2000} required value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
          <div class="buttons">
            <button type="submit" class="danger" disabled={busy || !reason.trim()}>
              Deny
            </button>
            <button type="button" onClick={() => setDenying(false)} disabled={busy}>
              Cancel
            </button>
          </div>
        </form>
      ) : editing ? (
        <EditApprove inv={inv} onDecided={onDecided} onClose={() => setEditing(false)} />
      ) : (
        <div class="buttons">
          <button class="primary" disabled={busy} aria-label={"Approve " + name} onClick={() => act(() => api.approve(inv.id, "once", inv.intent?.digest), "approved")}>
            Approve
          </button>
          <GrantOption inv={inv} onDecided={onDecided} />
          <button
            disabled={busy}
            aria-label={"Approve and always allow " + name}
            title="Permanent: stores an allow mode for this action; every later invocation runs without asking until an admin changes the mode."
            onClick={() => act(() => api.approve(inv.id, "always", inv.intent?.digest), "approved, and always allowed from now on")}
          >
            Approve &amp; always allow (permanent)
          </button>
          <button disabled={busy} aria-label={"Edit, then approve " + name} onClick={() => setEditing(true)}>
            Edit, then approve…
          </button>
          <button class="danger-outline" disabled={busy} aria-label={"Deny " + name} onClick={() => setDenying(true)}>
            Deny…
          </button>
        </div>
      )}
    </div>
  );
}
