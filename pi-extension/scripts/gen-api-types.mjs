#!/usr/bin/env node
// Generates pi-extension/api-types.ts, the TypeScript types of the pi-history
// API, from api/openapi.json: one type per schema of components.schemas and a
// Routes map ("METHOD /path" → its path parameters, query, JSON body and JSON
// response). It needs nothing but Node: the document uses a small part of
// JSON Schema (object, array, enum, $ref, nullable type lists), and anything
// else fails here with the place it was found, rather than becoming unknown.
//
//   node pi-extension/scripts/gen-api-types.mjs           writes api-types.ts
//   node pi-extension/scripts/gen-api-types.mjs --stdout  prints it instead
//   ... --spec other.json                                 reads another document
//
// The output is checked in; TestAPITypesMatchOpenAPI (pi-extension/
// apitypes_test.go) fails when it differs from what this script makes.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const specPath = join(here, "..", "..", "api", "openapi.json");
const outPath = join(here, "..", "api-types.ts");

/** The TypeScript of one JSON value as a literal type. */
const literal = (v) => JSON.stringify(v);

/** A property name as it may stand in a type literal. */
const key = (k) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : JSON.stringify(k));

/** A doc comment for description d at indentation ind, or "" without one. */
function doc(d, ind) {
	if (!d) return "";
	const text = String(d).replaceAll("*/", "*\\/");
	const lines = text.split("\n");
	if (lines.length === 1) return `${ind}/** ${text} */\n`;
	return `${ind}/**\n${lines.map((l) => `${ind} * ${l}`.trimEnd()).join("\n")}\n${ind} */\n`;
}

// The keywords the generator reads, and those that only constrain values
// (checked by the service, not by TypeScript).
const KNOWN = new Set([
	"type", "properties", "required", "additionalProperties", "items", "enum", "$ref", "description",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
	"minItems", "maxItems", "uniqueItems", "format", "default", "example", "examples", "title",
]);

/**
 * The TypeScript type of schema s; at says where it is in the document (for
 * errors), ind is the indentation of the line the type starts on.
 */
function typeOf(s, at, ind) {
	if (s === undefined || s === true) return "unknown";
	if (typeof s !== "object" || s === null) throw new Error(`${at}: a schema must be an object, not ${JSON.stringify(s)}`);
	for (const k of Object.keys(s)) {
		if (!KNOWN.has(k)) throw new Error(`${at}: the generator does not know the schema keyword ${JSON.stringify(k)}; teach scripts/gen-api-types.mjs what it means`);
	}
	if (s.$ref) {
		const m = /^#\/components\/schemas\/([A-Za-z0-9_]+)$/.exec(s.$ref);
		if (!m) throw new Error(`${at}: unsupported $ref ${s.$ref}`);
		return m[1];
	}
	if (s.enum) return s.enum.map(literal).join(" | ");
	const types = Array.isArray(s.type) ? s.type : [s.type];
	const parts = types.map((t) => {
		switch (t) {
			case "string":
				return "string";
			case "integer":
			case "number":
				return "number";
			case "boolean":
				return "boolean";
			case "null":
				return "null";
			case "array": {
				const item = typeOf(s.items, `${at}.items`, ind);
				return /^[A-Za-z0-9_]+$/.test(item) ? `${item}[]` : `Array<${item}>`;
			}
			case "object":
				return objectType(s, at, ind);
			case undefined:
				return "unknown";
			default:
				throw new Error(`${at}: unsupported type ${JSON.stringify(t)}`);
		}
	});
	return parts.join(" | ");
}

/** An object schema as a type literal (or a record when it names no properties). */
function objectType(s, at, ind) {
	const props = s.properties ?? {};
	const names = Object.keys(props);
	const extra = s.additionalProperties;
	if (names.length === 0) {
		if (extra === false) return "Record<string, never>";
		if (extra === undefined || extra === true) return "Record<string, unknown>";
		return `Record<string, ${typeOf(extra, `${at}.additionalProperties`, ind)}>`;
	}
	const required = new Set(s.required ?? []);
	for (const r of required) if (!(r in props)) throw new Error(`${at}: required property ${r} is not among its properties`);
	const inner = `${ind}\t`;
	let out = "{\n";
	for (const n of names) {
		const p = props[n];
		out += doc(p?.description, inner);
		out += `${inner}${key(n)}${required.has(n) ? "" : "?"}: ${typeOf(p, `${at}.properties.${n}`, inner)};\n`;
	}
	// Other members beside the named ones: unknown, since an index signature
	// must admit every named property's type too.
	if (extra !== undefined && extra !== false) out += `${inner}[key: string]: unknown;\n`;
	return `${out}${ind}}`;
}

/** A parameter, with a $ref to components.parameters resolved. */
function parameter(spec, p, at) {
	if (!p.$ref) return p;
	const m = /^#\/components\/parameters\/([A-Za-z0-9_]+)$/.exec(p.$ref);
	const r = m && spec.components?.parameters?.[m[1]];
	if (!r) throw new Error(`${at}: unresolved parameter ${p.$ref}`);
	return r;
}

/** The type literal of the parameters of op that are in where ("path" or "query"). */
function paramsType(spec, op, where, at, ind) {
	const ps = (op.parameters ?? []).map((p, i) => parameter(spec, p, `${at}.parameters[${i}]`)).filter((p) => p.in === where);
	if (ps.length === 0) return "Record<string, never>";
	const inner = `${ind}\t`;
	let out = "{\n";
	for (const p of ps) {
		out += doc(p.description, inner);
		out += `${inner}${key(p.name)}${p.required ? "" : "?"}: ${typeOf(p.schema, `${at}.${p.name}`, inner)};\n`;
	}
	return `${out}${ind}}`;
}

/** The type of a JSON request body or response (undefined when there is none, string for other media types). */
function contentType(content, at, ind) {
	if (!content) return "undefined";
	const json = content["application/json"];
	if (json) return typeOf(json.schema, `${at}["application/json"].schema`, ind);
	return "string";
}

export function generate(spec) {
	let out = `// Code generated by scripts/gen-api-types.mjs from api/openapi.json; DO NOT EDIT.
// Run \`node pi-extension/scripts/gen-api-types.mjs\` after changing the API
// document (TestAPITypesMatchOpenAPI fails until the two agree).

`;
	const schemas = spec.components?.schemas ?? {};
	for (const [name, s] of Object.entries(schemas)) {
		const at = `components.schemas.${name}`;
		out += doc(s.description, "");
		const t = typeOf(s, at, "");
		const isObject = (s.type === "object" || s.properties) && Object.keys(s.properties ?? {}).length > 0;
		out += isObject ? `export interface ${name} ${t}\n\n` : `export type ${name} = ${t};\n\n`;
	}
	out += `/**
 * Every route of the API by "METHOD /path": its path parameters, query
 * parameters, JSON request body (undefined: none) and JSON response of
 * success (string: a response that is not JSON).
 */
export interface Routes {
`;
	for (const [path, item] of Object.entries(spec.paths ?? {})) {
		for (const [method, op] of Object.entries(item)) {
			const at = `paths["${path}"].${method}`;
			const ind = "\t\t";
			const ok = Object.keys(op.responses ?? {}).filter((c) => /^2/.test(c)).sort()[0];
			if (!ok) throw new Error(`${at}: no success response`);
			const summary = [op.operationId, op.summary].filter(Boolean).join(": ");
			out += doc(summary, "\t");
			out += `\t${JSON.stringify(`${method.toUpperCase()} ${path}`)}: {\n`;
			out += `${ind}path: ${paramsType(spec, op, "path", at, ind)};\n`;
			out += `${ind}query: ${paramsType(spec, op, "query", at, ind)};\n`;
			out += `${ind}body: ${contentType(op.requestBody?.content, `${at}.requestBody.content`, ind)};\n`;
			out += `${ind}response: ${contentType(op.responses[ok].content, `${at}.responses.${ok}.content`, ind)};\n`;
			out += "\t};\n";
		}
	}
	out += "}\n\n/** A route of the API: \"METHOD /path\". */\nexport type Route = keyof Routes;\n";
	return out;
}

const isMain = process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
	const i = process.argv.indexOf("--spec");
	const spec = JSON.parse(readFileSync(i > 0 ? process.argv[i + 1] : specPath, "utf8"));
	const ts = generate(spec);
	if (process.argv.includes("--stdout")) process.stdout.write(ts);
	else writeFileSync(outPath, ts);
}
