-- The W3C trace context (traceparent) of the request that created an
-- invocation, when tracing was on: its jobs' spans join that trace across
-- processes and retries. approval_trace is the approver's, which
-- the job's span links to. NULL when tracing was off.
ALTER TABLE action_invocations ADD COLUMN trace_context text, ADD COLUMN approval_trace text;
