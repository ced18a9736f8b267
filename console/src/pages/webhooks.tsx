// Webhooks: endpoints, their signing secret (shown once, at creation and
// rotation), recent deliveries with their status, and re-enabling an
// endpoint outboxd disabled after failing for too long.
import { useEffect, useState } from "preact/hooks";
import { admin, WEBHOOK_EVENTS, type Delivery, type Webhook } from "../admin";
import { Card, DataTable, Empty, ErrorAlert, Flash, Loading, PageHead, Title, fmtTime } from "../ui";
import { ConfirmButton, FieldError, OnceSecret, TextField, apiFailure, useForm, type FieldErrors } from "../forms";

/** checkWebhook finds what the API would refuse before asking it. */
function checkWebhook(url: string, events: string[], description: string): FieldErrors {
  const errs: FieldErrors = {};
  if (!url.trim()) errs.url = "url is required";
  else if (url.length > 2048) errs.url = "url is longer than 2048 bytes";
  else {
    try {
      const u = new URL(url);
      if (u.protocol !== "http:" && u.protocol !== "https:") errs.url = "url: only http and https URLs are accepted";
    } catch {
      errs.url = "url: not a valid URL";
    }
  }
  if (events.length === 0) errs.events = "events must name at least one event";
  if (new TextEncoder().encode(description).length > 1000) errs.description = "description is longer than 1000 bytes";
  return errs;
}

function WebhookFields({ prefix, url, setURL, events, setEvents, description, setDescription, fields }: {
  prefix: string; url: string; setURL: (v: string) => void; events: string[]; setEvents: (v: string[]) => void;
  description: string; setDescription: (v: string) => void; fields: FieldErrors;
}) {
  return (
    <>
      <TextField id={prefix + "-url"} label="URL" value={url} onValue={setURL} error={fields.url} required placeholder="https://example.com/hooks/outboxd" />
      <fieldset class={"checks" + (fields.events ? " invalid" : "")} aria-describedby={fields.events ? prefix + "-events-err" : undefined}>
        <legend>Events</legend>
        {WEBHOOK_EVENTS.map((ev) => (
          <label key={ev}>
            <input
              type="checkbox"
              id={prefix + "-ev-" + ev}
              checked={events.includes(ev)}
              onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))}
            />
            {ev}
          </label>
        ))}
      </fieldset>
      <FieldError id={prefix + "-events"} message={fields.events} />
      <TextField id={prefix + "-description"} label="Description" value={description} onValue={setDescription} error={fields.description} />
    </>
  );
}

export function Webhooks() {
  const [list, setList] = useState<Webhook[] | null>(null);
  const [error, setError] = useState("");
  const [secret, setSecret] = useState("");
  const [url, setURL] = useState("");
  const [events, setEvents] = useState<string[]>(["action_completed"]);
  const [description, setDescription] = useState("");
  const form = useForm();
  const load = () =>
    admin
      .webhooks()
      .then((r) => setList(r.webhooks))
      .catch((e) => setError(apiFailure(e).message));
  useEffect(() => {
    load();
  }, []);
  const create = async (e: Event) => {
    e.preventDefault();
    if (form.clientErrors(checkWebhook(url, events, description))) return;
    await form.submit(async () => {
      const r = await admin.createWebhook({ url: url.trim(), events, description });
      setSecret(r.secret);
      setURL("");
      setDescription("");
      await load();
    });
  };
  if (!list && error) return <ErrorAlert error={error} />;
  if (!list) return <Loading />;
  return (
    <section aria-labelledby="wh-h">
      <Title id="wh-h">Webhooks</Title>
      <ErrorAlert error={error} />
      {secret ? <OnceSecret secret={secret} onDone={() => setSecret("")} /> : null}
      {list.length === 0 ? (
        <Empty>No webhooks.</Empty>
      ) : (
        <DataTable caption={list.length + " endpoints"} columns={["URL", "Events", "State", "Description"]}>
          {list.map((w) => (
            <tr key={w.id} data-webhook={w.url}>
              <th scope="row" class="wrap">
                <a href={"#/webhooks/" + w.id}>{w.url}</a>
              </th>
              <td>{w.events.join(", ")}</td>
              <td>
                <EnabledBadge w={w} />
              </td>
              <td class="wrap">{w.description}</td>
            </tr>
          ))}
        </DataTable>
      )}
      <Card id="wh-new-h" title="Add a webhook">
        <form class="admin-form" onSubmit={create} noValidate>
          <ErrorAlert error={form.error} />
          <WebhookFields prefix="wh-new" {...{ url, setURL, events, setEvents, description, setDescription }} fields={form.fields} />
          <div class="buttons">
            <button class="primary" type="submit" disabled={form.busy}>
              Create webhook
            </button>
          </div>
        </form>
      </Card>
    </section>
  );
}

function EnabledBadge({ w }: { w: Webhook }) {
  return <span class={"badge " + (w.enabled ? "status-completed" : "status-failed")}>{w.enabled ? "enabled" : "disabled"}</span>;
}

export function WebhookPage({ id }: { id: string }) {
  const [w, setW] = useState<Webhook | null>(null);
  const [deliveries, setDeliveries] = useState<Delivery[] | null>(null);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const [secret, setSecret] = useState("");
  const [url, setURL] = useState("");
  const [events, setEvents] = useState<string[]>([]);
  const [description, setDescription] = useState("");
  const form = useForm();
  const show = (x: Webhook) => {
    setW(x);
    setURL(x.url);
    setEvents(x.events);
    setDescription(x.description);
  };
  const loadDeliveries = () =>
    admin
      .deliveries(id)
      .then((r) => setDeliveries(r.deliveries))
      .catch((e) => setError(apiFailure(e).message));
  useEffect(() => {
    admin
      .webhook(id)
      .then((r) => show(r.webhook))
      .catch((e) => setError(apiFailure(e).message));
    loadDeliveries();
  }, [id]);
  const act = async (what: string, fn: () => Promise<void>) => {
    setError("");
    setFlash("");
    try {
      await fn();
      setFlash(what);
    } catch (e) {
      setError(apiFailure(e).message);
    }
  };
  const save = async (e: Event) => {
    e.preventDefault();
    setFlash("");
    if (form.clientErrors(checkWebhook(url, events, description))) return;
    if (await form.submit(async () => show((await admin.updateWebhook(id, { url: url.trim(), events, description })).webhook))) setFlash("Saved.");
  };
  if (!w && error) return <ErrorAlert error={error} />;
  if (!w) return <Loading />;
  return (
    <section aria-labelledby="whp-h">
      <PageHead id="whp-h" back={{ href: "#/webhooks", label: "Webhooks" }} title={"Webhook " + w.url}>
        <EnabledBadge w={w} />
      </PageHead>
      {!w.enabled ? (
        <div class="alert alert-error" role="alert">
          Disabled {w.disabled_at ? "since " + fmtTime(w.disabled_at) : ""}
          {w.disabled_reason ? ": " + w.disabled_reason : ""}. It gets no deliveries until it is enabled again.
        </div>
      ) : w.failing_since ? (
        <p class="alert alert-info">Failing since {fmtTime(w.failing_since)}.</p>
      ) : null}
      <Flash message={flash} />
      <ErrorAlert error={error} />
      {secret ? <OnceSecret secret={secret} onDone={() => setSecret("")} /> : null}
      <div class="buttons">
        {w.enabled ? (
          <ConfirmButton label="Disable" what="No deliveries until enabled again." onConfirm={() => act("Disabled.", async () => show((await admin.updateWebhook(id, { enabled: false })).webhook))} />
        ) : (
          <button class="primary" onClick={() => act("Enabled.", async () => show((await admin.updateWebhook(id, { enabled: true })).webhook))}>
            Enable
          </button>
        )}
        <ConfirmButton
          label="Rotate secret"
          what="Later attempts are signed with the new secret only."
          onConfirm={() =>
            act("Secret rotated.", async () => {
              const r = await admin.rotateWebhookSecret(id);
              show(r.webhook);
              setSecret(r.secret);
            })
          }
        />
        <ConfirmButton
          label="Delete"
          what="The endpoint and its pending deliveries are removed."
          onConfirm={() =>
            act("Deleted.", async () => {
              await admin.deleteWebhook(id);
              location.hash = "#/webhooks";
            })
          }
        />
      </div>
      <Card id="whp-edit-h" title="Edit">
        <form class="admin-form" onSubmit={save} noValidate>
          <ErrorAlert error={form.error} />
          <WebhookFields prefix="wh-edit" {...{ url, setURL, events, setEvents, description, setDescription }} fields={form.fields} />
          <div class="buttons">
            <button class="primary" type="submit" disabled={form.busy}>
              Save
            </button>
          </div>
        </form>
      </Card>
      <Card id="whp-del-h" title="Recent deliveries">
        <div class="buttons">
          <button onClick={loadDeliveries}>Refresh deliveries</button>
        </div>
        {deliveries && deliveries.length === 0 ? <Empty>No deliveries yet.</Empty> : null}
        {deliveries && deliveries.length > 0 ? (
          <DataTable columns={["Event", "Status", "Attempts", "Last answer", "Latency", "Error", "Created", "Next attempt"]}>
            {deliveries.map((d) => (
              <tr key={d.id} data-delivery={d.event_id}>
                <th scope="row">
                  {d.event_type} <span class="muted small">#{d.event_id}</span>
                </th>
                <td>
                  <span class={"badge delivery-" + d.status + (d.status === "delivered" ? " status-completed" : d.status === "dead" ? " status-failed" : " status-pending")}>{d.status}</span>
                </td>
                <td>{d.attempts}</td>
                <td>{d.last_status_code ?? "—"}</td>
                <td>{d.last_latency_ms === null ? "—" : d.last_latency_ms + " ms"}</td>
                <td class="wrap">{d.last_error ?? ""}</td>
                <td>{fmtTime(d.created_at)}</td>
                <td>{fmtTime(d.next_attempt_at)}</td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </Card>
    </section>
  );
}
