-- bench/live load script for wrk: every thread is one client (run wrk with -t N -c N: one connection
-- per thread, so requests of a client are sequential) reading its own feed /latest_news/<run>c<id>,
-- one new version per request (?v=1, 2, 3, ...). In "delta" mode the client accepts what Chromium
-- accepts and names the version it got last (Available-Dictionary = that body's SHA-256, which the
-- upstream sends as Body-Sha256, passed through by the proxy); in "gzip" mode it accepts gzip only.
-- Arguments (after --): mode (delta | gzip | identity), run prefix (unique per run: no body repeats).
local next_id = 1
local threads = {}

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  mode = args[1] or "delta"
  run = args[2] or "r"
  n = 0
  held = nil
  coded = 0
  body_bytes = 0
  responses = 0
  path = "/latest_news/" .. run .. "c" .. id .. "?v="
end

function request()
  n = n + 1
  local headers = {}
  if mode == "delta" then
    headers["Accept-Encoding"] = "gzip, deflate, br, zstd, dcb, dcz"
    if held then headers["Available-Dictionary"] = held end
  elseif mode == "gzip" then
    headers["Accept-Encoding"] = "gzip"
  end
  return wrk.format("GET", path .. n, headers)
end

function response(status, headers, body)
  held = headers["Body-Sha256"]
  responses = responses + 1
  body_bytes = body_bytes + #body
  local coding = headers["Content-Encoding"]
  if coding == "dcz" or coding == "dcb" then coded = coded + 1 end
end

-- One summary line for the runner: responses seen by the script, how many were dcb/dcz, body bytes.
function done(summary, latency, requests)
  local r, c, b = 0, 0, 0
  for _, t in ipairs(threads) do
    r = r + t:get("responses")
    c = c + t:get("coded")
    b = b + t:get("body_bytes")
  end
  io.write(string.format("FEED responses=%d dictionary_coded=%d body_bytes=%d\n", r, c, b))
end
