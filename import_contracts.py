"""An import-linter contract type the built-in ones lack: an allow-list. `forbidden` names what a package may not
import, so a new package below it is allowed until someone remembers to ban it; `allowed` names what it may import,
so anything new is refused until someone decides. Registered in pyproject.toml (`contract_types`); lint-imports
finds this module because it runs from the repository root."""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class AllowedContract(Contract):
    """Modules of `source_modules` (as packages) may directly import, within the root package, only themselves and
    `allowed_modules` (as packages). Indirect imports are the allowed modules' own business."""

    type_name = "allowed"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    allowed_modules = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        roots = {m.name.split(".")[0] for m in self.source_modules}  # type: ignore[attr-defined]
        allowed = [m.name for m in [*self.source_modules, *self.allowed_modules]]  # type: ignore[attr-defined]
        inside = lambda name, pkg: name == pkg or name.startswith(pkg + ".")  # noqa: E731
        found = []
        for source in self.source_modules:  # type: ignore[attr-defined]
            for importer in sorted({source.name} | graph.find_descendants(source.name)):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if imported.split(".")[0] not in roots or any(inside(imported, a) for a in allowed):
                        continue
                    lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
                    found.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not found, metadata={"found": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for f in check.metadata["found"]:
            where = ", ".join(f"l.{n}" for n in f["lines"])
            output.print_error(f"{f['importer']} -> {f['imported']} ({where}) is not on the allow-list")
            output.new_line()
