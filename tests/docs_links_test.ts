/**
 * The files the README and docs/ name in backticks (build outputs aside), their relative links,
 * and the heading each link's `#anchor` names, must exist.
 */
import { pagesNameNothingMissing } from "./helpers/docs_page_problems.ts";

pagesNameNothingMissing("paths");
pagesNameNothingMissing("links");
