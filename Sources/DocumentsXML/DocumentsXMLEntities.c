// The entities of well-known DTDs, built in, for the reader in DocumentsXML.c, which never reads an
// external DTD.

#include "DocumentsXMLEntities.h"

#include <libxml/HTMLparser.h>
#include <libxml/entities.h>
#include <string.h>

/// The public identifiers whose external subset declares the HTML 4 entity sets (Latin-1, symbols
/// and special characters: the 253 names libxml2's HTML parser knows). A document whose DOCTYPE
/// names one of them gets those entities without the DTD ever being read.
static const char *const html4_entity_dtds[] = {
    "-//W3C//DTD XHTML 1.0 Strict//EN",
    "-//W3C//DTD XHTML 1.0 Transitional//EN",
    "-//W3C//DTD XHTML 1.0 Frameset//EN",
    "-//W3C//DTD XHTML 1.1//EN",
    "-//W3C//DTD XHTML Basic 1.0//EN",
    "-//W3C//DTD XHTML Basic 1.1//EN",
    "-//W3C//DTD XHTML+RDFa 1.0//EN",
    "-//W3C//DTD XHTML+RDFa 1.1//EN",
    "-//W3C//DTD HTML 4.01//EN",
    "-//W3C//DTD HTML 4.01 Transitional//EN",
    "-//W3C//DTD HTML 4.01 Frameset//EN",
};

static int declares_html4_entities(const xmlChar *public_id) {
    if (public_id == NULL) return 0;
    for (size_t index = 0; index < sizeof html4_entity_dtds / sizeof *html4_entity_dtds; index++) {
        if (strcmp((const char *)public_id, html4_entity_dtds[index]) == 0) return 1;
    }
    return 0;
}

/// Writes `code_point` as UTF-8, NUL-terminated, into `text` (at least 5 bytes); its length, 0 for
/// a value that is no code point. Written here because libxml2's `xmlCopyCharMultiByte` is
/// deprecated since 2.14.
static int utf8_encode(unsigned int code_point, xmlChar *text) {
    int length;
    if (code_point < 0x80) {
        text[0] = (xmlChar)code_point;
        length = 1;
    } else if (code_point < 0x800) {
        text[0] = (xmlChar)(0xC0 | (code_point >> 6));
        text[1] = (xmlChar)(0x80 | (code_point & 0x3F));
        length = 2;
    } else if (code_point < 0x10000) {
        if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
        text[0] = (xmlChar)(0xE0 | (code_point >> 12));
        text[1] = (xmlChar)(0x80 | ((code_point >> 6) & 0x3F));
        text[2] = (xmlChar)(0x80 | (code_point & 0x3F));
        length = 3;
    } else if (code_point <= 0x10FFFF) {
        text[0] = (xmlChar)(0xF0 | (code_point >> 18));
        text[1] = (xmlChar)(0x80 | ((code_point >> 12) & 0x3F));
        text[2] = (xmlChar)(0x80 | ((code_point >> 6) & 0x3F));
        text[3] = (xmlChar)(0x80 | (code_point & 0x3F));
        length = 4;
    } else {
        return 0;
    }
    text[length] = 0;
    return length;
}

/// The entity `name` as the document's external subset declares it, when that subset is one of
/// the well-known DTDs above: declared on the fly in the document's DTD, so that libxml2 expands it
/// as it would have after reading the real one. NULL when the DTD is not known, or doesn't declare
/// it. A standalone document may not use the external subset's entities (XML 1.0, WFC: Entity
/// Declared), so it gets none.
xmlEntityPtr documents_xml_well_known_entity(xmlParserCtxtPtr parser, const xmlChar *name) {
    if (parser->standalone == 1 || parser->myDoc == NULL || parser->myDoc->intSubset == NULL) return NULL;
    if (!declares_html4_entities(parser->myDoc->intSubset->ExternalID)) return NULL;
    const htmlEntityDesc *known = htmlEntityLookup(name);
    if (known == NULL) return NULL;
    xmlChar text[8];
    if (utf8_encode(known->value, text) == 0) return NULL;
    return xmlAddDocEntity(parser->myDoc, name, XML_INTERNAL_GENERAL_ENTITY, NULL, NULL, text);
}
