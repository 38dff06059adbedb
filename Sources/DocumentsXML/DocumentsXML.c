// A SAX reader over libxml2 that collects what DocumentInfo needs and nothing else.
//
// Why by hand: Foundation's XMLParser on Linux crashes on some internal DTD subsets and accepts
// content after the root element, and libxml2's own headers can't be imported into Swift next to
// Foundation. This file is the thin layer between the two, with the entities of well-known DTDs in
// DocumentsXMLEntities.c: libxml2 does all the parsing.

#include "DocumentsXML.h"
#include "DocumentsXMLEntities.h"

#include <libxml/SAX2.h>
#include <libxml/entities.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct buffer {
    char *bytes;
    size_t length;
    size_t capacity;
} buffer;

typedef struct reader {
    buffer text;
    buffer title;
    int saw_root;
    int title_depth;  // > 0 while inside the first <title>
    int title_done;
    int out_of_memory;
    int error_line;
    char *error_message;  // the first error only: later ones are usually its echoes
} reader;

static void append(reader *state, buffer *into, const char *bytes, size_t length) {
    if (state->out_of_memory || length == 0) return;
    if (into->length + length > into->capacity) {
        size_t capacity = into->capacity ? into->capacity : 256;
        while (capacity < into->length + length) capacity *= 2;
        char *grown = realloc(into->bytes, capacity);
        if (grown == NULL) {
            state->out_of_memory = 1;
            return;
        }
        into->bytes = grown;
        into->capacity = capacity;
    }
    memcpy(into->bytes + into->length, bytes, length);
    into->length += length;
}

static reader *state_of(void *context) { return ((xmlParserCtxtPtr)context)->_private; }

static void fail(xmlParserCtxtPtr context, int line, const char *message) {
    reader *state = context->_private;
    if (state->error_message != NULL) return;
    state->error_line = line;
    state->error_message = strdup(message);
    size_t length = strlen(state->error_message);
    while (length > 0 && (state->error_message[length - 1] == '\n' || state->error_message[length - 1] == ' ')) {
        state->error_message[--length] = '\0';
    }
}

// MARK: - SAX callbacks

static void start_element(void *context, const xmlChar *local_name, const xmlChar *prefix, const xmlChar *uri,
                          int namespace_count, const xmlChar **namespaces, int attribute_count, int defaulted,
                          const xmlChar **attributes) {
    (void)prefix, (void)uri, (void)namespace_count, (void)namespaces, (void)attribute_count, (void)defaulted;
    (void)attributes;
    reader *state = state_of(context);
    state->saw_root = 1;
    if (state->title_depth > 0 || (!state->title_done && strcmp((const char *)local_name, "title") == 0)) {
        state->title_depth += 1;
    }
    append(state, &state->text, " ", 1);
}

static void end_element(void *context, const xmlChar *local_name, const xmlChar *prefix, const xmlChar *uri) {
    (void)local_name, (void)prefix, (void)uri;
    reader *state = state_of(context);
    if (state->title_depth > 0) {
        state->title_depth -= 1;
        if (state->title_depth == 0) state->title_done = 1;
    }
    append(state, &state->text, " ", 1);
}

// Not `characters`: Apple's SDKs build libxml2 with its legacy API, whose SAX.h declares a global
// function of that name, as of every SAX1 callback; the callbacks here have names of their own.
static void character_data(void *context, const xmlChar *bytes, int length) {
    reader *state = state_of(context);
    append(state, &state->text, (const char *)bytes, (size_t)length);
    if (state->title_depth > 0) append(state, &state->title, (const char *)bytes, (size_t)length);
}

// External general entities are refused where libxml2 looks them up, and external parameter
// entities and DTDs are never read, so no file is ever opened, whatever the parser's global entity
// loader is.
static xmlEntityPtr refuse_external(void *context, const char *reference) {
    xmlParserCtxtPtr parser = context;
    char message[300];
    snprintf(message, sizeof message, "the external entity %.200s is not loaded", reference);
    fail(parser, xmlSAX2GetLineNumber(parser), message);
    xmlStopParser(parser);
    return NULL;
}

// MARK: - Entities

static xmlEntityPtr get_entity(void *context, const xmlChar *name) {
    xmlEntityPtr entity = xmlSAX2GetEntity(context, name);
    if (entity == NULL) {
        // Declared in a well-known external subset, or undeclared: libxml2 then decides whether
        // that is an error (no external subset nor parameter entity reference, or standalone) or
        // an entity this reader doesn't know and leaves out.
        return documents_xml_well_known_entity(context, name);
    }
    if (entity->etype == XML_EXTERNAL_GENERAL_PARSED_ENTITY || entity->etype == XML_EXTERNAL_GENERAL_UNPARSED_ENTITY) {
        char reference[220];
        snprintf(reference, sizeof reference, "&%.200s;", (const char *)name);
        return refuse_external(context, reference);
    }
    return entity;
}

static xmlEntityPtr get_parameter_entity(void *context, const xmlChar *name) {
    xmlEntityPtr entity = xmlSAX2GetParameterEntity(context, name);
    if (entity != NULL && entity->etype == XML_EXTERNAL_PARAMETER_ENTITY) {
        // Declared, so well-formed, but never read: to libxml2 it looks undeclared, which in a
        // document that references parameter entities is a validity matter, not a well-formedness
        // one (XML 1.0, 4.1). Its declarations are unknown, so later undeclared entities are too.
        // libxml2 2.14 deprecates the field, and offers nothing else that tells the parser so.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        ((xmlParserCtxtPtr)context)->hasPErefs = 1;
#pragma GCC diagnostic pop
        return NULL;
    }
    return entity;
}

static xmlParserInputPtr resolve_entity(void *context, const xmlChar *public_id, const xmlChar *system_id) {
    (void)context, (void)public_id, (void)system_id;
    return NULL;
}

static void external_subset(void *context, const xmlChar *name, const xmlChar *public_id,
                            const xmlChar *system_id) {
    (void)context, (void)name, (void)public_id, (void)system_id;
}

// libxml2 2.12 made the structured error handler take a `const xmlError *`; Apple's SDKs still
// ship 2.9, and Linux distributions either.
#if LIBXML_VERSION >= 21200
static void structured_error(void *context, const xmlError *error) {
#else
static void structured_error(void *context, xmlErrorPtr error) {
#endif
    // Only fatal errors are well-formedness errors. Plain errors are about validity (an entity an
    // unread DTD may declare) or namespaces (an undeclared prefix), which XML 1.0 doesn't make
    // malformed; warnings never do.
    if (error == NULL || error->level < XML_ERR_FATAL) return;
    xmlParserCtxtPtr parser = context;
    fail(parser, error->line, error->message ? error->message : "not well-formed XML");
}

// MARK: - Parsing

static pthread_once_t initialized = PTHREAD_ONCE_INIT;
static void initialize(void) { xmlInitParser(); }

void documents_xml_parse(const void *bytes, size_t length, documents_xml_result *result) {
    memset(result, 0, sizeof *result);
    pthread_once(&initialized, initialize);
    reader state;
    memset(&state, 0, sizeof state);

    if (length > (size_t)INT32_MAX) {
        result->error_message = strdup("the document is larger than 2 GiB");
        return;
    }
    xmlParserCtxtPtr parser = xmlCreateMemoryParserCtxt(bytes, (int)length);
    if (parser == NULL) {
        result->error_message = strdup("libxml2 could not start a parser");
        return;
    }
    xmlSAXHandler handler;
    memset(&handler, 0, sizeof handler);
    xmlSAXVersion(&handler, 2);  // SAX2's defaults keep the internal subset's declarations
    handler.startElementNs = start_element;
    handler.endElementNs = end_element;
    handler.characters = character_data;
    handler.cdataBlock = character_data;
    handler.ignorableWhitespace = character_data;
    handler.getEntity = get_entity;
    handler.getParameterEntity = get_parameter_entity;
    handler.resolveEntity = resolve_entity;
    handler.externalSubset = external_subset;
    handler.serror = structured_error;
    handler.error = NULL;
    handler.warning = NULL;
    handler.fatalError = NULL;
    handler.startElement = NULL;  // SAX1 callbacks, unused with SAX2
    handler.endElement = NULL;
    handler.reference = NULL;
    handler.comment = NULL;
    handler.processingInstruction = NULL;

    xmlSAXHandlerPtr original = parser->sax;
    parser->sax = &handler;
    parser->userData = parser;
    parser->_private = &state;
    // NOENT: internal entities are replaced by their text, so it counts; NONET: no network, ever.
    // HUGE stays off, so libxml2's limits on entity amplification and depth hold.
    xmlCtxtUseOptions(parser, XML_PARSE_NOENT | XML_PARSE_NONET | XML_PARSE_NOCDATA);
    parser->sax = &handler;  // options may touch the handler; ours is what runs

    xmlParseDocument(parser);

    int well_formed = parser->wellFormed && state.error_message == NULL && state.saw_root && !state.out_of_memory;
    if (!well_formed && state.error_message == NULL) {
        fail(parser, xmlSAX2GetLineNumber(parser),
             state.out_of_memory ? "out of memory" : (state.saw_root ? "not well-formed XML" : "no root element"));
    }
    parser->sax = original;
    if (parser->myDoc != NULL) {
        xmlFreeDoc(parser->myDoc);
        parser->myDoc = NULL;
    }
    xmlFreeParserCtxt(parser);

    result->well_formed = well_formed;
    if (well_formed) {
        free(state.error_message);
        result->text = state.text.bytes;
        result->text_length = state.text.length;
        if (state.title_done || state.title_depth > 0) {
            // An empty title is still a title: give it a buffer of its own.
            result->title = state.title.bytes ? state.title.bytes : malloc(1);
            result->title_length = state.title.length;
        } else {
            free(state.title.bytes);
        }
    } else {
        free(state.text.bytes);
        free(state.title.bytes);
        result->error_line = state.error_line;
        result->error_message = state.error_message;
    }
}

void documents_xml_result_free(documents_xml_result *result) {
    free(result->text);
    free(result->title);
    free(result->error_message);
    memset(result, 0, sizeof *result);
}
