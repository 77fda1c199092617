// The service client: each route of the pi-history API called by its name in
// api-types.ts ("METHOD /path"), with its path parameters, query and body
// checked against the types generated from api/openapi.json, and its answer
// typed. Connecting, starting and proving the service is service.ts's job.

import type { Route, Routes } from "./api-types.ts";
import type { Service } from "./service.ts";

type NoParams = Record<string, never>;

/** Path parameters are required when the route has any, and absent otherwise. */
type PathArg<R extends Route> = Routes[R]["path"] extends NoParams ? { path?: undefined } : { path: Routes[R]["path"] };
/** A JSON body is required when the route takes one, and absent otherwise. */
type BodyArg<R extends Route> = Routes[R]["body"] extends undefined ? { body?: undefined } : { body: Routes[R]["body"] };

/** The arguments of one call of route R. */
export type CallArgs<R extends Route> = PathArg<R> &
	BodyArg<R> & {
		query?: Routes[R]["query"];
		signal?: AbortSignal;
	};

/** The query parameters of route R. */
export type QueryOf<R extends Route> = Routes[R]["query"];

/** The JSON response of route R. */
export type ResponseOf<R extends Route> = Routes[R]["response"];

export class ApiClient {
	readonly service: Service;

	constructor(service: Service) {
		this.service = service;
	}

	/**
	 * Calls route R. Path parameters are URL-encoded into the path; query
	 * values that are undefined, null, "" or false are left out (see
	 * Service.request). Throws ServiceDown or ApiError as Service.request does.
	 */
	call<R extends Route>(route: R, args: CallArgs<R>): Promise<ResponseOf<R>> {
		const space = route.indexOf(" ");
		const method = route.slice(0, space);
		const params: Record<string, string> = args.path ?? {};
		const path = route.slice(space + 1).replace(/\{([A-Za-z0-9_]+)\}/g, (_, name: string) => {
			const v = params[name];
			if (v === undefined) throw new Error(`${route}: path parameter ${name} is missing`);
			return encodeURIComponent(v);
		});
		const query: Record<string, unknown> | undefined = args.query;
		return this.service.request<ResponseOf<R>>(method, path, { body: args.body, query, signal: args.signal });
	}
}
