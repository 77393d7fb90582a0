/* tags.h - every MPI message tag the engine uses, in one place so that no two parts of
 * it can ever match each other's messages. Each family has its own range; the
 * bookkeeping tags of timing.c sit above them all (MPI guarantees tags up to 32767). */
#ifndef FB_TAGS_H
#define FB_TAGS_H

enum fb_tag {
    /* pt2pt.c */
    FB_TAG_PING = 1,
    FB_TAG_PONG = 2,
    FB_TAG_DATA = 3,
    FB_TAG_ACK = 4,
    /* hpcc_net.c */
    FB_TAG_HPCC_PING = 11,
    FB_TAG_HPCC_PONG = 12,
    FB_TAG_HPCC_TOKEN = 13,
    FB_TAG_RING_TO_RIGHT = 14,
    FB_TAG_RING_TO_LEFT = 15,
    /* allpairs.c */
    FB_TAG_AP_DATA = 41,
    FB_TAG_AP_ACK = 42,
    FB_TAG_AP_PING = 43,
    FB_TAG_AP_PONG = 44,
    FB_TAG_AP_RESULT = 45,
    /* loggp.c */
    FB_TAG_LG_DATA = 51,
    FB_TAG_LG_ACK = 52,
    /* timing.c */
    FB_TAG_QUIET_BARRIER = 30000,
    FB_TAG_GUARD = 30001,
};

#endif
