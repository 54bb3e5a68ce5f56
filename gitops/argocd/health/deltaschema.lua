-- Argo CD health check for delta-operator.io/DeltaSchema
-- (argocd-cm key resource.customizations.health.delta-operator.io_DeltaSchema).
-- Argo CD runs it with the base, table and package libraries only: no string, no math.
--
--   Progressing  no status yet; status.observedGeneration behind metadata.generation;
--                Reconciling=True
--   Degraded     Stalled=True for any reason but ApprovalRequired (Forbidden, an invalid
--                spec, ApplyFailed...; DriftDetected: driftPolicy Fail and drift not applied)
--   Suspended    Stalled=True reason ApprovalRequired (strict mode: dropping orphan tables
--                waits for delta-operator.io/approve=<status.plan.id>); or
--                delta-operator.io/paused=true
--   Healthy      Ready=True; orphan tables kept by additive mode are named in the message
-- BEGIN generated from the Reason enum (crates/api/src/reason.rs): do not edit; DELTA_OPERATOR_BLESS=1 cargo test -p delta-operator-api rewrites it
-- Progressing: NotCached, SchemaNotFound, WarehouseStarting, Locked, PlanStale, LeaseLost, ReadRetrying, WaitingForParent, WaitingForDependency, Deferred, Applying, Interrupted
-- Holding: Observing, Paused
-- Stalled: ApprovalRequired, InvalidSpec, UnknownTarget, TargetUnavailable, Forbidden, ReadFailed, ApplyFailed, CrashLoop, DeleteFailed, Blocked, ParentFailed, DriftDetected, ColumnSpellingMustMatchCatalog, OwnedByAnotherResource, UnsupportedTableFeatures, TableUnreadable, ScopeTooWideForKind, UnmanagedAspectDrift, ForeignKeyInvalid, PrimaryKeyReferenced, AmbiguousColumnRename, ColumnKindCannotChange, NameWouldBeSubstituted, NameNeedsColumnMapping, NotSupportedByBackend, NonNullableColumnAdd, ConversionNeedsUsing, NestedNotNullNeedsInPlaceAlter, PropertyTransitionNotSupported, ColumnMappingNotWritable, UsingReadsUnknownColumn, RewriteRefused, NameLooksLikeLiveTable, DependencyCycle
-- Stalled reasons that wait for an approval, not a fix (Suspended, not Degraded):
local AWAITING_APPROVAL = {ApprovalRequired = true}
-- END generated
local hs = {status = "Progressing", message = "Waiting for delta-operator to read the schema"}

local function condition_map(status)
  local c = {}
  if status ~= nil and status.conditions ~= nil then
    for _, x in ipairs(status.conditions) do
      if x.type ~= nil then c[x.type] = x end
    end
  end
  return c
end

local function is_true(x) return x ~= nil and x.status == "True" end

local function text(x, fallback)
  if x ~= nil and x.message ~= nil and x.message ~= "" then return x.message end
  return fallback
end

-- "+0 ~1 -0 (destructive)" from status.plan, or nil
local function plan_summary(status)
  local p = status and status.plan
  if p == nil or p.summary == nil then return nil end
  if p.risk ~= nil then return p.summary .. " (" .. p.risk .. ")" end
  return p.summary
end

local status = obj.status
local c = condition_map(status)
if status == nil or next(c) == nil then return hs end

local generation = tonumber(obj.metadata.generation)
local observed = tonumber(status.observedGeneration) or 0
if generation ~= nil and observed < generation then
  hs.message = "Waiting for delta-operator to observe generation " .. generation .. " (status is for " .. observed .. ")"
  return hs
end

local stalled = c["Stalled"]
if is_true(stalled) and not AWAITING_APPROVAL[stalled.reason] then
  hs.status = "Degraded"
  hs.message = (stalled.reason or "Stalled") .. ": " .. text(stalled, "needs a fix")
  return hs
end

local annotations = obj.metadata.annotations or {}
if annotations["delta-operator.io/paused"] == "true" then
  hs.status = "Suspended"
  hs.message = "Paused (delta-operator.io/paused=true): no writes"
  if status.plan ~= nil then
    hs.message = hs.message .. "; pending: " .. (plan_summary(status) or "a plan")
  end
  return hs
end

if is_true(stalled) then
  hs.status = "Suspended"
  hs.message = "Awaiting approval: " .. text(stalled, "dropping the orphan tables needs the annotation delta-operator.io/approve=<status.plan.id>")
  return hs
end

local reconciling = c["Reconciling"]
if is_true(reconciling) then
  hs.message = (reconciling.reason or "Reconciling") .. ": " .. text(reconciling, "in progress")
  return hs
end

local ready = c["Ready"]
if is_true(ready) then
  hs.status = "Healthy"
  hs.message = text(ready, "the schema matches the spec")
  local orphans = status.orphans
  if orphans ~= nil and #orphans > 0 then
    hs.message = hs.message .. "; " .. #orphans .. " orphan table(s) kept (additive mode): " .. table.concat(orphans, ", ")
  end
  return hs
end

-- Ready=False with neither Reconciling nor Stalled: a pause just lifted, or an unknown state;
-- the operator writes a new status on its next reconcile
hs.message = "Waiting for delta-operator: " .. ((ready and ready.reason) or "no Ready condition")
if text(ready, nil) ~= nil then hs.message = hs.message .. ": " .. ready.message end
return hs
