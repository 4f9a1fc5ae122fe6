-- Argo CD health for cdcflow.io/CdcConnector: generation observed, Stalled -> Degraded,
-- paused/stopped -> Suspended, Ready -> Healthy, everything else Progressing.
local hs = {status = "Progressing", message = "Waiting for the operator"}
if obj.metadata.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Pending deletion"}
end
if obj.status == nil then return hs end
local generation = obj.metadata.generation or 0
if obj.status.observedGeneration == nil or obj.status.observedGeneration < generation then
  return {status = "Progressing", message = "Waiting for the operator to observe generation " .. generation}
end
if obj.spec ~= nil and (obj.spec.state == "paused" or obj.spec.state == "stopped") then
  return {status = "Suspended", message = "Connector is " .. obj.spec.state}
end
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Stalled" and c.status == "True" then
    return {status = "Degraded", message = c.reason .. ": " .. (c.message or "")}
  end
end
for _, c in ipairs(obj.status.conditions or {}) do
  if c.type == "Ready" then
    if c.status == "True" then return {status = "Healthy", message = c.message or c.reason} end
    if c.reason == "ConnectorFailed" then
      return {status = "Degraded", message = c.reason .. ": " .. (c.message or "")}
    end
    return {status = "Progressing", message = c.reason .. ": " .. (c.message or "")}
  end
end
return hs
