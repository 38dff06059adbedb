#ifndef DOCUMENTS_XML_ENTITIES_H
#define DOCUMENTS_XML_ENTITIES_H

// What DocumentsXML.c asks of DocumentsXMLEntities.c. Private to DocumentsXML.

#include <libxml/parser.h>

/// The entity `name` as the document's external subset declares it, when that subset is one of
/// the well-known DTDs: declared on the fly in the document's DTD; NULL when the DTD is not known,
/// doesn't declare it, or the document is standalone.
xmlEntityPtr documents_xml_well_known_entity(xmlParserCtxtPtr parser, const xmlChar *name);

#endif
