// Server-sent events from a fetch response body, parsed as they arrive.

function parse(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { event, data: data.join("\n") } : null;
}

/** Yields {event, data} for each event of the stream, until it ends. */
export async function* events(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let held = "";   // a CR at a chunk's end: its LF may open the next chunk
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    let text = held + value;
    held = text.endsWith("\r") ? "\r" : "";
    if (held) text = text.slice(0, -1);
    buffer = (buffer + text).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const found = parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (found) yield found;
    }
  }
  const last = parse(buffer + (held && "\n"));
  if (last) yield last;
}
