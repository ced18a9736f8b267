// Credentials: the organization's provider tokens, per provider and per
// user. Tokens are write-only: the page shows only that one is stored,
// when and by whom.
import { useEffect, useState } from "preact/hooks";
import { admin, type Credential, type CredentialProvider } from "../admin";
import { Card, DataTable, Empty, ErrorAlert, Flash, Loading, PageHead, fmtTime } from "../ui";
import { ChoiceField, ConfirmButton, SecretField, TextField, apiFailure, useForm, type FieldErrors } from "../forms";

export function CredentialsPage() {
  const [list, setList] = useState<Credential[] | null>(null);
  // Every provider that takes a credential, stored or not: the catalog
  // lists a provider only once it has one, so it cannot offer the first.
  const [providers, setProviders] = useState<CredentialProvider[]>([]);
  const [error, setError] = useState("");
  const [flash, setFlash] = useState("");
  const [integration, setIntegration] = useState("");
  const [userID, setUserID] = useState("");
  const [kind, setKind] = useState("api_key");
  const [secret, setSecret] = useState("");
  const form = useForm();

  const load = () =>
    admin
      .credentials()
      .then((r) => {
        setList(r.credentials);
        setProviders(r.providers);
        setIntegration((cur) => cur || r.providers[0]?.integration || "");
      })
      .catch((e) => setError(apiFailure(e).message));
  useEffect(() => {
    load();
  }, []);
  const providerName = (id: string) => {
    const p = providers.find((x) => x.integration === id);
    return p?.name ? `${p.name} (${id})` : id;
  };

  const exists = list?.some((c) => c.integration === integration && (c.user_id ?? "") === userID.trim());
  const store = async (e: Event) => {
    e.preventDefault();
    setFlash("");
    const errs: FieldErrors = {};
    if (!integration) errs.integration = "choose a provider";
    if (!secret.trim()) errs.token = "token is required";
    if (userID.trim().length > 255) errs.user_id = "user_id must be at most 255 characters";
    if (form.clientErrors(errs)) return;
    const ok = await form.submit(async () => {
      await admin.putCredential(integration, { token: secret, token_kind: kind, ...(userID.trim() ? { user_id: userID.trim() } : {}) });
    });
    if (ok) {
      setSecret("");
      setFlash(`${exists ? "Replaced" : "Stored"} the ${integration} credential${userID.trim() ? " of user " + userID.trim() : ""}.`);
      load();
    }
  };

  if (!list && error) return <ErrorAlert error={error} />;
  if (!list) return <Loading />;
  return (
    <section aria-labelledby="cred-h">
      <PageHead id="cred-h" title="Credentials" />
      <p class="muted">
        Provider tokens are sealed when stored and never shown again. A credential with a user is used for invocations whose token carries that user; the
        organization's otherwise.
      </p>
      <Flash message={flash} />
      <ErrorAlert error={error} />
      {list.length === 0 ? (
        <Empty>No credentials stored.</Empty>
      ) : (
        <DataTable caption={list.length + " stored"} columns={["Provider", "User", "Kind", "Stored by", "Updated", "Note"]} actions>
          {list.map((c) => (
            <tr key={c.integration + "/" + (c.user_id ?? "")} data-credential={c.integration + (c.user_id ? "/" + c.user_id : "")}>
              <th scope="row">{c.integration}</th>
              <td>{c.user_id ?? <span class="muted">organization</span>}</td>
              <td>{c.token_kind ?? "api_key"}</td>
              <td>{c.updated_by}</td>
              <td>{fmtTime(c.updated_at)}</td>
              <td class="wrap">{c.note ?? ""}</td>
              <td class="buttons">
                <button
                  onClick={() => {
                    setIntegration(c.integration);
                    setUserID(c.user_id ?? "");
                    setKind(c.token_kind || "api_key");
                    setSecret("");
                    form.reset();
                    document.getElementById("cred-token")?.focus();
                  }}
                  aria-label={`Replace ${c.integration}${c.user_id ? " of " + c.user_id : ""}`}
                >
                  Replace
                </button>{" "}
                <ConfirmButton
                  label={`Delete ${c.integration}${c.user_id ? " of " + c.user_id : ""}`}
                  what={c.user_id ? "The organization's credential is used for this user again, if one is stored." : "Invocations of this provider fail until a credential is stored."}
                  onConfirm={async () => {
                    setError("");
                    setFlash("");
                    try {
                      await admin.deleteCredential(c.integration, c.user_id);
                      setFlash(`Deleted the ${c.integration} credential${c.user_id ? " of user " + c.user_id : ""}.`);
                      load();
                    } catch (e) {
                      setError(apiFailure(e).message);
                    }
                  }}
                >
                  Delete
                </ConfirmButton>
              </td>
            </tr>
          ))}
        </DataTable>
      )}
      <Card id="cred-form-h" title={exists ? "Replace a credential" : "Store a credential"}>
        <form class="admin-form" onSubmit={store} noValidate>
          <ErrorAlert error={form.error} />
          <div class="row">
            <ChoiceField
              id="cred-integration"
              label="Provider"
              value={integration}
              options={[...new Set([...providers.map((p) => p.integration), ...list.map((c) => c.integration)])]}
              optionLabel={providerName}
              onValue={setIntegration}
              error={form.fields.integration}
            />
            <TextField id="cred-user" label="User (optional)" value={userID} onValue={setUserID} error={form.fields.user_id} help="The user_id claim it is for; empty for the organization." />
            <ChoiceField id="cred-kind" label="Token kind" value={kind} options={["api_key", "oauth"]} onValue={setKind} error={form.fields.token_kind} />
          </div>
          <SecretField id="cred-token" label="Token" value={secret} onValue={setSecret} error={form.fields.token} required stored={exists} />
          <div class="buttons">
            <button class="primary" type="submit" disabled={form.busy}>
              {exists ? "Replace credential" : "Store credential"}
            </button>
          </div>
        </form>
      </Card>
    </section>
  );
}
