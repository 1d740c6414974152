import { request } from 'node:http';

/** What {@link httpRequest} sends besides the URL. */
export interface HttpRequestOptions {
  method?: string;
  /** Sent as given, `Host` included (fetch would derive it from the URL). */
  headers?: Record<string, string>;
  body?: string;
}

/** A finished HTTP exchange: status, headers (lower-case names) and body text. */
export interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Sends one HTTP/1.1 request over node:http to `url`, with headers as given: unlike fetch, it
 * can forge `Host`, as a browser does for a page whose name was rebound to this address.
 */
export function httpRequest(url: string, options: HttpRequestOptions = {}): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: options.method ?? 'GET', headers: options.headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}
