// Every data call of the console: the admin key from sessionStorage goes with each one,
// as a bearer token. Nothing is kept in cookies or in URLs.

export const BASE = "/v1/infer";
const STORE = "b3os.console.key";

export const session = {
  key: () => sessionStorage.getItem(STORE),
  keep: (key) => sessionStorage.setItem(STORE, key),
  forget: () => sessionStorage.removeItem(STORE),
  /** The id inside a key (b3os_<id>_<secret>), to tell which key is ours. */
  keyId: () => (sessionStorage.getItem(STORE) || "").split("_")[1] || "",
};

export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The error of a failed response, from either API's envelope. */
export async function apiError(response) {
  let message = `${response.status} ${response.statusText}`;
  let code = "";
  try {
    const body = await response.json();
    const error = body.error || {};
    message = error.message || message;
    code = (body.b3os && body.b3os.code) || error.code || "";
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message, code);
}

export async function call(method, path, body, signal) {
  const headers = { authorization: `Bearer ${session.key()}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(BASE + path, {
    method, headers, signal, credentials: "omit", cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await apiError(response);
  return response;
}

export async function getJSON(path) {
  return (await call("GET", path)).json();
}

/** /healthz answers 503 with its body when a model is down; both are shown. */
export async function health() {
  const response = await fetch("/healthz", { credentials: "omit", cache: "no-store" });
  try {
    return await response.json();
  } catch {
    return { status: `unreadable (${response.status})` };
  }
}
