// The preview of a pending invocation (GET /v1/invocations/{id}'s
// `preview`): what it will do, rendered by a worker job, shown above the
// raw params on the inbox card and the invocation page.
import { Fragment } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./preview.css";
import { api, type Invocation, type InvocationPreview } from "./api";
import { Shown } from "./ui";

/** PREVIEW_POLLS bounds how often a card asks whether its preview is ready. */
const PREVIEW_POLLS = 20;

/**
 * Preview shows inv's preview. Without one yet (the inbox lists carry none,
 * and a fresh invocation's job may still be rendering), it asks for the
 * invocation again every second a few times while it is pending, and holds
 * the preview's place meanwhile so that the decision buttons below do not
 * move under the approver's pointer when it arrives.
 */
export function Preview({ inv }: { inv: Invocation }) {
  const [rec, setRec] = useState<InvocationPreview | undefined>(inv.preview);
  const [gaveUp, setGaveUp] = useState(false);
  useEffect(() => setRec(inv.preview), [inv.preview]);
  useEffect(() => {
    if (rec || inv.status !== "pending") return;
    let polls = 0;
    let stop = false;
    const tick = () => {
      if (stop) return;
      if (polls++ >= PREVIEW_POLLS) {
        setGaveUp(true);
        return;
      }
      api
        .getInvocation(inv.id)
        .then((r) => {
          if (stop) return;
          if (r.invocation.preview) setRec(r.invocation.preview);
          else timer = setTimeout(tick, 1000);
        })
        .catch(() => !stop && setGaveUp(true));
    };
    let timer = setTimeout(tick, 0);
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [inv.id, inv.status, rec]);

  if (!rec && inv.status === "pending" && !gaveUp) {
    return (
      <div class="preview preview-pending" role="status" aria-busy="true" aria-label="Preview">
        <p class="muted">Rendering the preview…</p>
      </div>
    );
  }
  if (!rec || rec.status === "unsupported") return null;
  if (rec.status === "failed" || !rec.preview) {
    return (
      <div class="preview preview-failed" role="note" aria-label="Preview">
        <p class="muted">No preview: {rec.note || "it could not be rendered"}. The raw params follow.</p>
      </div>
    );
  }
  const p = rec.preview;
  return (
    <section class={"preview preview-" + p.kind} aria-label="Preview">
      <h3 class="preview-title">
        <Shown text={p.title} />
      </h3>
      {p.fields && p.fields.length > 0 ? (
        <dl class="facts preview-fields">
          {p.fields.map((f) => (
            <Fragment key={f.name}>
              <dt title={f.description}>
                <Shown text={f.name} />
              </dt>
              <dd>
                <Shown text={f.value} />
                {f.description ? <div class="muted preview-desc">{f.description}</div> : null}
              </dd>
            </Fragment>
          ))}
        </dl>
      ) : null}
      {p.changes && p.changes.length > 0 ? (
        <table class="preview-diff" aria-label="Changes">
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Before</th>
              <th scope="col">After</th>
            </tr>
          </thead>
          <tbody>
            {p.changes.map((c) => (
              <tr key={c.field}>
                <th scope="row">
                  <Shown text={c.field} />
                </th>
                <td class="before">{c.before ? <Shown text={c.before} /> : <span class="muted">none</span>}</td>
                <td class="after">{c.after ? <Shown text={c.after} /> : <span class="muted">none</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : p.kind === "diff" ? (
        <p class="muted">Nothing changes: every field already has that value.</p>
      ) : null}
      {p.plan ? (
        <p class="preview-plan">
          Estimate: {p.plan.node}, about {Math.round(p.plan.rows)} rows, cost {p.plan.total_cost.toFixed(2)}
          {p.plan.relations && p.plan.relations.length > 0 ? ` (reads ${p.plan.relations.join(", ")})` : ""}
        </p>
      ) : null}
      {p.text ? (
        <pre class="preview-text">
          <Shown text={p.text} />
        </pre>
      ) : null}
      {p.notes && p.notes.length > 0 ? (
        <ul class="muted preview-notes">
          {p.notes.map((n) => (
            <li key={n}>
              <Shown text={n} />
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
