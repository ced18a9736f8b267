// The administration forms' building blocks: the API's field errors shown
// next to their fields, fields that carry them, a write-only secret field,
// and a destructive button that asks for confirmation first.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { ApiError } from "./api";
import { errorText } from "./ui";
import "./admin.css";

/** FieldErrors maps a field's name as the API names it to its message. */
export type FieldErrors = Record<string, string>;

/**
 * apiFailure splits an error into the API's field errors (a 400's
 * details.fields: [{field, message}]) and the message to show above the
 * form: the API's own, when no field is named.
 */
export function apiFailure(e: unknown): { fields: FieldErrors; message: string } {
  const fields: FieldErrors = {};
  if (e instanceof ApiError && e.details && typeof e.details === "object") {
    const list = (e.details as { fields?: { field: string; message: string }[] }).fields;
    for (const f of list ?? []) {
      const key = f.field || "";
      fields[key] = fields[key] ? fields[key] + "; " + f.message : f.message;
    }
  }
  return { fields, message: errorText(e) };
}

/** useForm holds a form's field errors and its error above the form. */
export function useForm() {
  const [fields, setFields] = useState<FieldErrors>({});
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  return {
    fields,
    error,
    busy,
    setError,
    /** clientErrors shows errors found before sending, as the API would name them. */
    clientErrors(errs: FieldErrors): boolean {
      if (Object.keys(errs).length === 0) return false;
      setFields(errs);
      setError("Check the fields marked below.");
      return true;
    },
    /** submit runs fn, showing the API's field errors next to their fields. */
    async submit(fn: () => Promise<void>): Promise<boolean> {
      setBusy(true);
      setFields({});
      setError("");
      try {
        await fn();
        return true;
      } catch (e) {
        const f = apiFailure(e);
        setFields(f.fields);
        setError(f.message);
        return false;
      } finally {
        setBusy(false);
      }
    },
    reset() {
      setFields({});
      setError("");
    },
  };
}

/** FieldError is the message of one field, linked to its control by id. */
export function FieldError({ id, message }: { id: string; message?: string }) {
  return message ? (
    <small id={id + "-err"} class="field-error" data-field-error>
      {message}
    </small>
  ) : null;
}

type TextProps = {
  id: string;
  label: string;
  value: string;
  onValue: (v: string) => void;
  error?: string;
  help?: string;
  type?: string;
  placeholder?: string;
  required?: boolean;
  disabled?: boolean;
  autocomplete?: string;
};

/** TextField is a labelled input with its help and its error. */
export function TextField({ id, label, value, onValue, error, help, required, ...rest }: TextProps) {
  const described = [help ? id + "-help" : "", error ? id + "-err" : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class={"field" + (error ? " invalid" : "")}>
      <label for={id}>
        {label}
        {required ? <span class="req" aria-hidden="true"> *</span> : null}
      </label>
      <input id={id} value={value} required={required} aria-invalid={error ? true : undefined} aria-describedby={described} onInput={(e) => onValue(e.currentTarget.value)} {...rest} />
      {help ? (
        <small id={id + "-help"} class="help">
          {help}
        </small>
      ) : null}
      <FieldError id={id} message={error} />
    </div>
  );
}

/**
 * SecretField is write-only: it starts empty, is never filled from the
 * server, and says whether a secret is already stored.
 */
export function SecretField({ stored, ...p }: TextProps & { stored?: boolean }) {
  return (
    <TextField
      {...p}
      type="password"
      autocomplete="new-password"
      help={(p.help ? p.help + " " : "") + (stored ? "A secret is stored; it is never shown." : "Write-only: it is never shown again.")}
    />
  );
}

type ChoiceProps = { id: string; label: string; value: string; options: string[]; onValue: (v: string) => void; error?: string; optionLabel?: (o: string) => string; disabled?: boolean };

/** ChoiceField is a labelled select with its error. */
export function ChoiceField({ id, label, value, options, onValue, error, optionLabel = (o) => o, disabled }: ChoiceProps) {
  return (
    <div class={"field" + (error ? " invalid" : "")}>
      <label for={id}>{label}</label>
      <select id={id} value={value} disabled={disabled} aria-invalid={error ? true : undefined} aria-describedby={error ? id + "-err" : undefined} onChange={(e) => onValue(e.currentTarget.value)}>
        {options.map((o) => (
          <option key={o} value={o}>
            {optionLabel(o)}
          </option>
        ))}
      </select>
      <FieldError id={id} message={error} />
    </div>
  );
}

/**
 * ConfirmButton asks before a destructive action: the first click shows
 * what will happen and a confirming button, the second does it.
 */
export function ConfirmButton({ label, what, onConfirm, children }: { label: string; what: string; onConfirm: () => Promise<void> | void; children?: ComponentChildren }) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button class="danger-outline" onClick={() => setAsking(true)} aria-label={label}>
        {children ?? label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={"Confirm: " + label}>
      <span>{what}</span>
      <button
        class="danger"
        data-confirm
        onClick={async () => {
          setAsking(false);
          await onConfirm();
        }}
      >
        Yes, {label.toLowerCase()}
      </button>
      <button onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}

/** OnceSecret shows a secret the API returns once, with a warning. */
export function OnceSecret({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <div class="alert alert-info once-secret" role="status">
      <p>
        <strong>Copy this secret now: it is shown only once.</strong>
      </p>
      <pre class="json" tabIndex={0} data-secret>
        {secret}
      </pre>
      <button onClick={onDone}>I have stored it</button>
    </div>
  );
}

/** ReadOnlyNote tells a member why they see no controls. */
export function ReadOnlyNote() {
  return <p class="alert alert-info">You can read these settings; only an admin or owner can change them.</p>;
}
