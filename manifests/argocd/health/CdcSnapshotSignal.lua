-- Argo CD health for cdcflow.io/CdcSnapshotSignal: a bounded action, read from Succeeded.
if obj.status == nil or obj.status.conditions == nil then
  return {status = "Progressing", message = "Waiting for the operator"}
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Succeeded" then
    if c.status == "True" then return {status = "Healthy", message = c.reason} end
    if c.status == "False" then
      return {status = "Degraded", message = c.reason .. ": " .. (c.message or "")}
    end
    return {status = "Progressing", message = c.reason .. ": " .. (c.message or "")}
  end
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Stalled" and c.status == "True" then
    return {status = "Degraded", message = c.reason .. ": " .. (c.message or "")}
  end
end
return {status = "Progressing", message = "Waiting to signal"}
