-- Argo CD health check for delta-operator.io/DeltaTable
-- (argocd-cm key resource.customizations.health.delta-operator.io_DeltaTable).
-- Argo CD runs it with the base, table and package libraries only: no string, no math.
--
--   Progressing  no status yet; status.observedGeneration behind metadata.generation;
--                Reconciling=True (planning, applying, waiting for its DeltaSchema)
--   Degraded     Stalled=True for any reason but ApprovalRequired (Forbidden, a refused
--                change, ApplyFailed, ReadFailed, OwnedByAnotherResource...; DriftDetected:
--                driftPolicy Fail and drift not applied, until applied or approved)
--   Suspended    Stalled=True reason ApprovalRequired (a plan waits for the annotation
--                delta-operator.io/approve=<status.plan.id>); or delta-operator.io/paused=true
--   Healthy      Ready=True; with policy Observe and Drifted=True the message says so
-- BEGIN generated from the Reason enum (crates/api/src/reason.rs): do not edit; DELTA_OPERATOR_BLESS=1 cargo test -p delta-operator-api rewrites it
-- Progressing: NotCached, SchemaNotFound, WarehouseStarting, Locked, PlanStale, LeaseLost, ReadRetrying, WaitingForParent, WaitingForDependency, Deferred, Applying, Interrupted
-- Holding: Observing, Paused
-- Stalled: ApprovalRequired, InvalidSpec, UnknownTarget, TargetUnavailable, Forbidden, ReadFailed, ApplyFailed, CrashLoop, DeleteFailed, Blocked, ParentFailed, DriftDetected, ColumnSpellingMustMatchCatalog, OwnedByAnotherResource, UnsupportedTableFeatures, TableUnreadable, ScopeTooWideForKind, UnmanagedAspectDrift, ForeignKeyInvalid, PrimaryKeyReferenced, AmbiguousColumnRename, ColumnKindCannotChange, NameWouldBeSubstituted, NameNeedsColumnMapping, NotSupportedByBackend, NonNullableColumnAdd, ConversionNeedsUsing, NestedNotNullNeedsInPlaceAlter, PropertyTransitionNotSupported, ColumnMappingNotWritable, UsingReadsUnknownColumn, RewriteRefused, NameLooksLikeLiveTable, DependencyCycle
-- Stalled reasons that wait for an approval, not a fix (Suspended, not Degraded):
local AWAITING_APPROVAL = {ApprovalRequired = true}
-- END generated
local hs = {status = "Progressing", message = "Waiting for delta-operator to read the table"}

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
  local drifted = c["Drifted"]
  if is_true(drifted) then
    hs.message = hs.message .. "; pending: " .. (plan_summary(status) or text(drifted, "changes"))
  end
  return hs
end

if is_true(stalled) then
  hs.status = "Suspended"
  hs.message = "Awaiting approval: " .. text(stalled, "the plan needs the annotation delta-operator.io/approve=<status.plan.id>")
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
  hs.message = text(ready, "the table matches the spec")
  local drifted = c["Drifted"]
  if is_true(drifted) then
    hs.message = hs.message .. "; drift: " .. (plan_summary(status) or text(drifted, "the live table differs"))
  end
  return hs
end

-- Ready=False with neither Reconciling nor Stalled: a pause just lifted, or an unknown state;
-- the operator writes a new status on its next reconcile
hs.message = "Waiting for delta-operator: " .. ((ready and ready.reason) or "no Ready condition")
if text(ready, nil) ~= nil then hs.message = hs.message .. ": " .. ready.message end
return hs
