"""The pages of the test MediaWiki, as plain data, and a writer of the MediaWiki XML dump
(export format 0.11) that ``mediawiki.py`` next to this file imports.

Every page has one to four revisions at known UTC instants, so a crawler test can check each
rule: creation date = first revision, "the last revision strictly before T" (one revision lies
exactly on 2023-01-01T00:00:00Z), redirects (two to the same article), disambiguation pages
(one by template, one by category only), a "List of ..." page, a stub under 50 words, and an
article using every wikitext feature a converter must strip (templates, ``<ref>``s including a
named re-use, a table, a file with a caption, categories, piped links, headings, bold/italic,
a References section with ``{{reflist}}`` followed by External links).

The wiki this runs on has no Disambiguator extension, so the page property
``disambiguation`` is never set: disambiguation pages are recognisable only by the
``{{disambiguation}}`` template or the ``Category:Disambiguation pages`` category. The
template's body deliberately adds no category, so each of the two disambiguation pages is
found by exactly one of those two routes.

Words that appear ONLY inside markup a converter must remove are collected in
:data:`MARKUP_ONLY_WORDS` (feature -> word); :data:`BODY_WORDS` holds words that appear in the
prose of the flagship article and must survive conversion.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

EXPORT_NS = "http://www.mediawiki.org/xml/export-0.11/"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
XML_NS = "http://www.w3.org/XML/1998/namespace"

#: Namespaces declared in the dump's <siteinfo> (key -> canonical name; "" = main).
NAMESPACES = {-2: "Media", -1: "Special", 0: "", 1: "Talk", 2: "User", 4: "Project",
              6: "File", 10: "Template", 14: "Category"}


def ts(text: str) -> dt.datetime:
    """``"2020-01-02T03:04:05Z"`` -> an aware UTC datetime."""
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Revision:
    timestamp: dt.datetime
    text: str
    user: str = "Editor"
    comment: str = ""


@dataclass(frozen=True)
class Page:
    """``kind`` is one of article, redirect, disambiguation, list, stub, template."""

    title: str
    kind: str
    revisions: tuple[Revision, ...]
    ns: int = 0
    redirect_to: str | None = None

    @property
    def created(self) -> dt.datetime:
        return self.revisions[0].timestamp

    @property
    def latest(self) -> Revision:
        return self.revisions[-1]


def _rev(stamp: str, text: str, user: str = "Editor", comment: str = "") -> Revision:
    return Revision(ts(stamp), text.strip("\n") + "\n", user, comment)


# --- the flagship article: every wikitext feature --------------------------------------------

MARKUP_ONLY_WORDS = {
    "infobox": "Brackleshaw",         # only as an infobox parameter value
    "ref": "Quillerton",              # only inside <ref>...</ref>
    "cite": "Tidewatch",              # only inside {{cite web}} in a ref
    "table": "Saltmarrow",            # only in a table cell
    "file_caption": "Gullwing",       # only in a [[File:...]] caption
    "category": "Harrowshire buildings",  # only as a category name
    "external_links": "Lanternkeeper",    # only after == References ==, in External links
    "heading": "Keepers and automation",  # only as a section heading
}
#: Words in the flagship article's prose (link labels included) that a converter keeps.
BODY_WORDS = ("whitewashed", "Ellisande", "foghorn", "granite", "Harrowgate")

_HARROWGATE_INTRO = """\
{{Infobox
| name = Harrowgate Lighthouse
| location = Brackleshaw Point
| built = 1861
}}
The '''Harrowgate Lighthouse''' is a whitewashed granite tower standing on the northern
headland of [[Harrowgate]], a fishing town on the eastern coast of [[Harrowshire|the county]].
It was designed by the engineer ''Tobias Ellisande'' and first lit in the autumn of 1861,
replacing a timber beacon that storms had twice carried into the sea.<ref>{{cite web
|title=Tidewatch survey of coastal lights |publisher=County Records |access-date=2015-03-01}}</ref>
The tower rises fourteen metres above the rock and its lamp can be seen from roughly
twenty nautical miles on a clear night.<ref name="survey">Quillerton, coastal survey, 1902.</ref>
"""

_HARROWGATE_HISTORY_1 = """\
== History ==
Before the tower was raised, ships approaching the harbour relied on a bonfire kept by the
harbour master and on the church bell, which was rung by hand whenever fog rolled in from the
open water. Several wrecks in the 1850s persuaded the town council to petition for a proper
light, and a subscription among merchants paid for the foundations. Local quarrymen cut the
stone from the cliffs a short walk inland, and the blocks were hauled up the slope on sledges
pulled by horses borrowed from nearby farms.
[[File:Harrowgate light.jpg|thumb|Gullwing view of the tower at dusk]]
The original lamp burned colza oil and was turned by a clockwork mechanism that the keeper wound
every four hours. A brass foghorn, driven by compressed air, was added in 1894 after a steamer
ran aground on the reef below the headland during a winter gale.<ref name="survey"/>
"""

_HARROWGATE_KEEPERS = """\
== Keepers and automation ==
Three families kept the light over the following century, and their logbooks record
weather, passing ships and the occasional rescue. The last resident keeper, Miriam Oldcastle,
left in 1987 when the lamp was converted to electricity and a remote monitoring link was
installed. The cottages at the foot of the tower were later sold and now serve as a small
museum that opens during the summer months.
{| class="wikitable"
! Year !! Event
|-
| 1861 || First lit, Saltmarrow oil store built
|-
| 1894 || Foghorn added
|-
| 1987 || Automated
|}
"""

_HARROWGATE_2024 = """\
In 2024 the county heritage trust repainted the tower, repaired the lantern glazing and
replaced the old electric lamp with a low power light that draws its current from panels on
the cottage roof. Visitors may now climb the spiral stair on open days.
"""

_HARROWGATE_TAIL = """\
== References ==
{{reflist}}

== External links ==
* [https://example.org/harrowgate Lanternkeeper society page on the tower]

[[Category:Lighthouses in Harrowshire]]
[[Category:Harrowshire buildings]]
"""

HARROWGATE_REVISIONS = (
    _rev("2015-03-10T09:15:00Z",
         _HARROWGATE_INTRO + "\n" + _HARROWGATE_HISTORY_1 + "\n" + _HARROWGATE_TAIL,
         "Beaconwright", "New article"),
    _rev("2017-02-11T13:00:00Z",
         _HARROWGATE_INTRO.replace("fourteen metres", "fifteen metres") + "\n"
         + _HARROWGATE_HISTORY_1 + "\n" + _HARROWGATE_TAIL,
         "Coastwatcher", "height corrected"),
    _rev("2019-06-01T12:00:00Z",
         _HARROWGATE_INTRO.replace("fourteen metres", "fifteen metres") + "\n"
         + _HARROWGATE_HISTORY_1 + "\n" + _HARROWGATE_KEEPERS + "\n" + _HARROWGATE_TAIL,
         "Beaconwright", "keepers section"),
    _rev("2024-08-15T10:30:00Z",
         _HARROWGATE_INTRO.replace("fourteen metres", "fifteen metres") + "\n"
         + _HARROWGATE_HISTORY_1 + "\n" + _HARROWGATE_KEEPERS + "\n" + _HARROWGATE_2024 + "\n"
         + _HARROWGATE_TAIL,
         "Heritagefan", "restoration of 2024"),
)

# --- other articles ---------------------------------------------------------------------------

_VELORIA_A = """\
The '''Veloria moth''' (''Veloria pallens'') is a small night-flying moth found in the heath
and pine woodland of the Corrin uplands. Its forewings are a pale straw colour crossed by two
thin rust lines, and the hindwings are almost white, which gives resting moths the look of a
fallen birch leaf. Adults have a wingspan of twenty to twenty-four millimetres and fly from
late June until the first frosts, with a peak in the warm still evenings of August.

== Description ==
The caterpillar is green with a faint yellow stripe along each side and feeds on heather,
bilberry and occasionally young pine needles. It grows slowly through the autumn, spends the
winter curled in moss at the base of its food plant and resumes feeding in spring before it
spins a loose cocoon among the leaf litter. Pupation lasts about three weeks. Collectors in
the nineteenth century confused the species with the common straw moth, and many old cabinet
specimens carry the wrong label.

== Distribution ==
Records come mostly from sandy soils below four hundred metres. The moth is attracted to
light traps, and volunteer recorders have counted it at more than sixty sites since the first
county atlas was compiled. Numbers appear stable where the heath is grazed or cut in rotation,
but the species has vanished from several places where bracken and birch scrub were allowed to
close over the open ground.
"""

_VELORIA_2023 = """\

== Conservation ==
A survey published at the turn of 2023 listed the Veloria moth as locally scarce. Heath
managers were advised to leave patches of old heather uncut, because the caterpillars overwinter
in the deep moss beneath mature plants rather than in young regrowth.
"""

_VELORIA_2025 = """\

== Research ==
Since 2025 a study using harmonic radar tags has followed individual moths across a grazed
heath, showing that most adults stay within a few hundred metres of the patch where they
emerged, which helps to explain why isolated colonies are so easily lost.
"""

_QUENBY_BRIDGE = """\
The '''Quenby River Bridge''' is a three-span stone arch bridge carrying the old drovers' road
over the [[Quenby River]] at the village of Lower Fennick. It was completed in 1782 by a mason
named Samuel Rudd, whose initials and the date are carved into the keystone of the central arch.
The bridge replaced a ford that was impassable for much of the winter, and it allowed cattle to
be driven to the markets of the lowland towns in every season.

== Structure ==
Each arch spans about eleven metres. The piers have pointed cutwaters on the upstream side to
part the current and floating debris, and the parapets were raised by half a metre in 1903 after
a carriage overturned on the approach. The roadway is paved with setts that were relaid during
a careful restoration in 1988, when engineers also injected lime grout into cracks in the
northern arch that had opened after a severe flood.

== Use today ==
Motor traffic was diverted to a modern concrete bridge downstream in 1971, and the old crossing
is now used by walkers, cyclists and the occasional flock of sheep. Otters are regularly seen
beneath the arches, and a footpath along the bank links the bridge with a mill pond and a
restored water wheel about a kilometre upstream. The village holds a fair on the bridge every
midsummer, when stalls line the parapets and a brass band plays from the central span.
"""

_PELLHAM_A = """\
'''Pellham Clockworks''' was a workshop in the town of [[Pellham]] that made tower clocks,
chronometers and domestic bracket clocks between 1824 and 1961. It was founded by the brothers
Ezra and Jonah Pellow, sons of a blacksmith, who had learned their trade repairing the church
clock for the parish. Their first commissions were for turret clocks on market halls and
chapels in the surrounding villages, and by the middle of the century the firm supplied clocks
to railway stations along the whole eastern line.

== Products ==
The workshop became known for a robust flatbed movement that could be maintained by a village
handyman, and for an escapement design that kept good time in damp and unheated towers. Surviving
order books list more than nine hundred turret clocks. Smaller bracket clocks with engraved
brass dials were sold through jewellers in the county towns, and a handful were exported to
merchants overseas. Marine chronometers were made in small numbers for the coastal trade,
each one tested for six weeks in a cellar kept at a steady temperature before it was sold.

== Decline ==
Electric synchronous clocks reduced demand after the Second World War, and the firm turned to
repairs and servicing before it closed. The workshop building, with its long north facing
windows, now houses a community printing press and a repair cafe.
"""

_PELLHAM_2024 = """\

== Legacy ==
In 2024 volunteers restored the Pellham clock on the town hall to working order, using the
original drawings found in a box of papers donated by a descendant of the founders.
"""

_CORRIN_RAILWAY_A = """\
The '''Corrin Valley Railway''' is a heritage narrow gauge railway that reopened in 2025 along
part of a former quarry line in the [[Corrin]] hills. The original line was built in 1874 to
carry slate from the upper workings to a wharf on the estuary, and passengers were carried in
open wagons on market days long before the company was licensed to do so. Quarrying ended in
1946 and the rails were lifted a few years later, leaving the trackbed to sheep and walkers.

== Restoration ==
A society of volunteers formed to rebuild the line bought the trackbed in stages, cleared the
cuttings of fallen rock and rebuilt two small viaducts with stone recovered from the quarry
tips. Steel sleepers were donated by a closed industrial line elsewhere, and the society
restored a saddle tank locomotive that had spent fifty years as a climbing frame in a park.
The first three kilometres opened to the public in the spring, with trains running hourly at
weekends between the estuary station and a halt beside the old winding house.

== Rolling stock ==
The fleet includes two steam locomotives, a small diesel shunter used for works trains and four
carriages built in the society's own shed to the pattern of a surviving quarrymen's coach.
"""

_CORRIN_RAILWAY_B = """\

== Extension ==
In September 2025 the society began work on a further section towards the upper quarry, where
the old incline and its drum house are to be preserved as a viewing point.
"""

_ALDERMOOR_STUB = """\
'''Aldermoor Chapel''' is a small stone chapel of ease near the hamlet of Aldermoor. It was built
around 1740 and is used for services a few times a year.

[[Category:Chapels in Harrowshire]]
"""

_LIST = """\
This is a '''list of lighthouses in Harrowshire''', ordered from north to south along the coast.
Each lighthouse is shown with the year it was first lit and whether it is still in service.

{| class="wikitable"
! Name !! First lit !! Status
|-
| [[Harrowgate Lighthouse]] || 1861 || Active
|-
| Brackleshaw Beacon || 1790 || Ruined
|-
| Fennick Spit Light || 1902 || Active
|}

* [[Harrowgate Lighthouse]], on the northern headland of Harrowgate
* Brackleshaw Beacon, an early coal fired beacon
* Fennick Spit Light, a steel lattice tower at the river mouth

[[Category:Lighthouses in Harrowshire]]
[[Category:Lists of lighthouses]]
"""

_QUENBY_DISAMBIG = """\
'''Quenby''' may refer to:

* [[Quenby River Bridge]], a stone bridge at Lower Fennick
* [[Quenby River]], a river in Harrowshire
* Quenby Hall, a country house

{{disambiguation}}
"""

_CORRIN_DISAMBIG = """\
'''Corrin''' may refer to:

* [[Corrin Valley Railway]], a heritage railway
* The Corrin hills, an upland area of heath and pine woodland

[[Category:Disambiguation pages]]
"""

TEMPLATE_BODIES = {
    "Template:Infobox": (
        '{| class="infobox"\n! colspan="2" | {{{name|}}}\n|-\n| Location || {{{location|}}}\n'
        "|-\n| Built || {{{built|}}}\n|}<noinclude>A simple infobox for tests.</noinclude>"),
    "Template:Cite web": (
        "''{{{title|}}}''. {{{publisher|}}}. Retrieved {{{access-date|}}}."
        "<noinclude>A simple citation template for tests.</noinclude>"),
    "Template:Reflist": '<div class="reflist"><references /></div>',
    "Template:Disambiguation": (
        "''This disambiguation page lists articles associated with the same title.''"
        "<noinclude>Adds no category, so a page using it is found by the template only."
        "</noinclude>"),
}

PAGES: tuple[Page, ...] = (
    Page("Harrowgate Lighthouse", "article", HARROWGATE_REVISIONS),
    Page("Veloria moth", "article", (
        _rev("2019-05-20T14:00:00Z", _VELORIA_A, "Mothwatcher", "New article"),
        _rev("2023-01-01T00:00:00Z", _VELORIA_A + _VELORIA_2023, "Heathkeeper", "conservation"),
        _rev("2025-02-10T08:45:00Z", _VELORIA_A + _VELORIA_2023 + _VELORIA_2025, "Mothwatcher",
             "research"),
    )),
    Page("Quenby River Bridge", "article", (
        _rev("2021-07-04T16:20:00Z", _QUENBY_BRIDGE, "Bridgeman", "New article"),
    )),
    Page("Pellham Clockworks", "article", (
        _rev("2023-06-15T11:00:00Z", _PELLHAM_A, "Horologist", "New article"),
        _rev("2024-11-02T09:30:00Z", _PELLHAM_A + _PELLHAM_2024, "Horologist", "legacy"),
    )),
    Page("Corrin Valley Railway", "article", (
        _rev("2025-03-01T07:00:00Z", _CORRIN_RAILWAY_A, "Steamfan", "New article"),
        _rev("2025-09-12T18:00:00Z", _CORRIN_RAILWAY_A + _CORRIN_RAILWAY_B, "Steamfan",
             "extension"),
    )),
    Page("Aldermoor Chapel", "stub", (
        _rev("2016-09-09T10:00:00Z", _ALDERMOOR_STUB, "Beaconwright", "stub"),
    )),
    Page("List of lighthouses in Harrowshire", "list", (
        _rev("2018-04-04T12:00:00Z", _LIST, "Coastwatcher", "New list"),
    )),
    Page("Harrowgate Light", "redirect", (
        _rev("2016-01-01T12:00:00Z", "#REDIRECT [[Harrowgate Lighthouse]]", "Coastwatcher"),
    ), redirect_to="Harrowgate Lighthouse"),
    Page("Harrowgate lighthouse", "redirect", (
        _rev("2020-02-02T02:02:02Z", "#REDIRECT [[Harrowgate Lighthouse]]", "Beaconwright"),
    ), redirect_to="Harrowgate Lighthouse"),
    Page("Quenby", "disambiguation", (
        _rev("2021-08-01T00:00:00Z", _QUENBY_DISAMBIG, "Bridgeman", "disambiguation"),
    )),
    Page("Corrin", "disambiguation", (
        _rev("2025-04-01T12:00:00Z", _CORRIN_DISAMBIG, "Steamfan", "disambiguation"),
    )),
    *(Page(title, "template", (_rev("2014-01-01T00:00:00Z", body, "Templater", "template"),), ns=10)
      for title, body in TEMPLATE_BODIES.items()),
)

#: The instant exactly on which a revision lies (Veloria moth's second revision).
ROUND_INSTANT = ts("2023-01-01T00:00:00Z")


# --- helpers for tests ------------------------------------------------------------------------

def page(title: str) -> Page:
    for p in PAGES:
        if p.title == title:
            return p
    raise KeyError(f"no page {title!r} in wiki_pages.PAGES")


def titles(kind: str | None = None, ns: int | None = 0) -> list[str]:
    """Titles of the pages of ``kind`` (None: any) in namespace ``ns`` (None: any), in
    :data:`PAGES` order."""
    return [p.title for p in PAGES
            if (kind is None or p.kind == kind) and (ns is None or p.ns == ns)]


def creation(title: str) -> dt.datetime:
    """The instant of the page's first revision (what the wiki reports as its creation)."""
    return page(title).created


def revision_before(title: str, instant: dt.datetime) -> Revision | None:
    """The last revision strictly before ``instant`` (None if the page did not exist yet)."""
    older = [r for r in page(title).revisions if r.timestamp < instant]
    return older[-1] if older else None


def text_before(title: str, instant: dt.datetime) -> str | None:
    rev = revision_before(title, instant)
    return None if rev is None else rev.text


def created_between(after: dt.datetime, before: dt.datetime, kind: str | None = None,
                    ns: int = 0) -> list[str]:
    """Titles in ``ns`` whose first revision lies in ``[after, before)``."""
    return [p.title for p in PAGES if p.ns == ns and after <= p.created < before
            and (kind is None or p.kind == kind)]


def word_count(text: str) -> int:
    return len(text.split())


# --- the XML dump ----------------------------------------------------------------------------

def _sha1_base36(text: str) -> str:
    """MediaWiki's revision sha1: the SHA-1 of the UTF-8 text in base 36, 31 digits."""
    n = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out.rjust(31, "0")


def _full_title(p: Page) -> str:
    return p.title if p.ns == 0 or ":" in p.title else f"{NAMESPACES[p.ns]}:{p.title}"


def dump_xml(pages: tuple[Page, ...] | list[Page] = PAGES, *, sitename: str = "TestWiki",
             base: str = "http://127.0.0.1/index.php/Main_Page") -> bytes:
    """The pages as a MediaWiki export-0.11 XML document (UTF-8 bytes): pages outside the main
    namespace (the templates) first, so they exist when the articles using them are imported.
    Page and revision ids are numbered from 1 in that order; an importing wiki renumbers them."""
    ET.register_namespace("", EXPORT_NS)
    ET.register_namespace("xsi", XSI_NS)
    q = lambda tag: f"{{{EXPORT_NS}}}{tag}"  # noqa: E731
    root = ET.Element(q("mediawiki"), {
        f"{{{XSI_NS}}}schemaLocation":
            f"{EXPORT_NS} http://www.mediawiki.org/xml/export-0.11.xsd",
        "version": "0.11", f"{{{XML_NS}}}lang": "en"})
    info = ET.SubElement(root, q("siteinfo"))
    for tag, value in (("sitename", sitename), ("dbname", "testwiki"), ("base", base),
                       ("generator", "MediaWiki 1.39.0"), ("case", "first-letter")):
        ET.SubElement(info, q(tag)).text = value
    nss = ET.SubElement(info, q("namespaces"))
    for key, name in NAMESPACES.items():
        ET.SubElement(nss, q("namespace"), {"key": str(key), "case": "first-letter"}).text = name
    rev_id = 0
    for page_id, p in enumerate(sorted(pages, key=lambda p: p.ns == 0), start=1):
        el = ET.SubElement(root, q("page"))
        ET.SubElement(el, q("title")).text = _full_title(p)
        ET.SubElement(el, q("ns")).text = str(p.ns)
        ET.SubElement(el, q("id")).text = str(page_id)
        if p.redirect_to:
            ET.SubElement(el, q("redirect"), {"title": p.redirect_to})
        parent = None
        for r in p.revisions:
            rev_id += 1
            rv = ET.SubElement(el, q("revision"))
            ET.SubElement(rv, q("id")).text = str(rev_id)
            if parent is not None:
                ET.SubElement(rv, q("parentid")).text = str(parent)
            ET.SubElement(rv, q("timestamp")).text = r.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ")
            who = ET.SubElement(rv, q("contributor"))
            ET.SubElement(who, q("username")).text = r.user
            ET.SubElement(who, q("id")).text = "0"
            if r.comment:
                ET.SubElement(rv, q("comment")).text = r.comment
            ET.SubElement(rv, q("model")).text = "wikitext"
            ET.SubElement(rv, q("format")).text = "text/x-wiki"
            ET.SubElement(rv, q("text"), {
                f"{{{XML_NS}}}space": "preserve",
                "bytes": str(len(r.text.encode("utf-8")))}).text = r.text
            ET.SubElement(rv, q("sha1")).text = _sha1_base36(r.text)
            parent = rev_id
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write_dump(path: str | Path, pages: tuple[Page, ...] | list[Page] = PAGES) -> Path:
    """Write :func:`dump_xml` of ``pages`` to ``path``; return the path."""
    path = Path(path)
    path.write_bytes(dump_xml(pages))
    return path
